package server

import "context"

// UploadOrganization is the organization of a signed upload URL's token
// (false when the token is not one: bad signature, expired), for the
// gateway's per-organization share of uploads before the body is read.
func (s *FileService) UploadOrganization(ctx context.Context, token string) (string, bool) {
	g, err := s.sig.verify(ctx, token, grantUpload)
	if err != nil {
		return "", false
	}
	return g.Org, true
}
