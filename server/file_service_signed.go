package server

import (
	"context"
	"errors"
	"sort"
	"strings"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// The v2 upload form's fields (POST /v2/files answers them; the multipart
// POST to upload_url must carry exactly these plus the file part "file").
// The names follow the pre-signed POST forms clients already know.
const (
	formKey           = "key"
	formAccessKeyID   = "AWSAccessKeyId"
	formSecurityToken = "x-amz-security-token"
	formPolicy        = "policy"
	formSignature     = "signature"
	formContentType   = "Content-Type"
	// FormFileField is the multipart part that carries the bytes.
	FormFileField = "file"
)

var formFields = []string{formKey, formAccessKeyID, formSecurityToken, formPolicy, formSignature, formContentType}

// uploadForm returns the form fields of an upload token.
func uploadForm(ctx context.Context, sig *fileSigner, token string, g fileGrant) (map[string]string, error) {
	keyID, err := sig.keyID(ctx)
	if err != nil {
		return nil, err
	}
	sec, err := sig.securityToken(ctx, token)
	if err != nil {
		return nil, err
	}
	policy, signature, _ := strings.Cut(token, ".")
	return map[string]string{
		formKey:           names.File(g.Org, g.File),
		formAccessKeyID:   keyID,
		formSecurityToken: sec,
		formPolicy:        policy,
		formSignature:     signature,
		formContentType:   g.MimeType,
	}, nil
}

// checkForm verifies that fields are exactly the form of token.
func checkForm(ctx context.Context, sig *fileSigner, token string, g fileGrant, fields map[string]string) error {
	if fields == nil {
		return transport.InvalidArgument(ReasonUploadFormInvalid, "this URL takes a multipart/form-data POST with the upload_fields and a file part named file")
	}
	want, err := uploadForm(ctx, sig, token, g)
	if err != nil {
		return err
	}
	var missing, unknown []string
	for _, k := range formFields {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range fields {
		if _, ok := want[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(missing) > 0 || len(unknown) > 0 {
		msg := "the form must carry exactly the upload_fields and the file"
		if len(missing) > 0 {
			msg += "; missing: " + strings.Join(missing, ", ")
		}
		if len(unknown) > 0 {
			msg += "; unknown: " + strings.Join(unknown, ", ")
		}
		return transport.InvalidArgument(ReasonUploadFormInvalid, msg)
	}
	if fields[formPolicy]+"."+fields[formSignature] != token {
		return transport.PermissionDenied(ReasonSignedURLInvalid, "the policy and signature fields do not match the URL")
	}
	for _, k := range formFields {
		if fields[k] != want[k] {
			msg := "the form field " + k + " was changed; send upload_fields unchanged"
			return transport.InvalidArgument(ReasonUploadFormInvalid, msg, transport.Violation(k, msg))
		}
	}
	return nil
}

// usableType is a Content-Type that says something about the file (not the
// defaults of curl and multipart writers).
func usableType(t string) string {
	t = strings.TrimSpace(t)
	switch strings.ToLower(strings.Split(t, ";")[0]) {
	case "", "application/octet-stream", "application/x-www-form-urlencoded", "multipart/form-data":
		return ""
	}
	return t
}

// UploadSigned stores the bytes sent to a signed upload URL. filename is
// the multipart file part's name or the ?filename= query; contentType the
// part's or the body's Content-Type; fields the multipart form fields other
// than the file (nil for a raw body). Errors are statuses: INVALID_ARGUMENT
// for a malformed token or form or a file over the limit,
// PERMISSION_DENIED for a bad signature or an expired URL,
// FAILED_PRECONDITION UPLOAD_URL_USED for a second upload to a URL of one
// file (legacy uploads are single-use).
func (s *FileService) UploadSigned(ctx context.Context, token, filename, contentType string, fields map[string]string, content []byte) (*platformv1.FileMetadata, error) {
	g, err := s.sig.verify(ctx, token, grantUpload)
	if err != nil {
		return nil, err
	}
	if g.Form {
		if err := checkForm(ctx, s.sig, token, g, fields); err != nil {
			return nil, err
		}
	} else if len(fields) > 0 {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, transport.InvalidArgument(ReasonUploadFormInvalid, "unexpected form fields: "+strings.Join(keys, ", ")+"; send only a file part named file")
	}
	if err := s.tooLarge(len(content)); err != nil {
		return nil, err
	}
	if g.File != "" {
		mt := g.MimeType
		if mt == "" {
			mt = usableType(contentType)
		}
		f, err := s.st.PutFileContent(ctx, g.Org, g.File, mt, content)
		if errors.Is(err, store.ErrAlreadyExists) {
			return nil, transport.FailedPrecondition(ReasonUploadURLUsed,
				"this upload URL was used already: each upload URL of /v1/upload and /v2/files takes one upload; ask for a new one",
				map[string]string{"file": names.File(g.Org, g.File)})
		}
		if err != nil {
			return nil, fileStoreError(err, g.Org, g.File)
		}
		return fileProto(f), nil
	}
	if err := checkFilename("filename", filename); err != nil {
		return nil, err
	}
	f, err := s.st.CreateFile(ctx, store.File{
		OrganizationID: g.Org, WorkspaceID: g.Workspace, Filename: filename, MimeType: mimeTypeFor(usableType(contentType), filename),
	}, content, true)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, transport.NotFound(ReasonOrganizationNotFound, names.Organization(g.Org))
		}
		return nil, fileStoreError(err, g.Org, "")
	}
	return fileProto(f), nil
}

// DownloadSigned returns the metadata and bytes a signed download URL
// names. Errors as UploadSigned, and NOT_FOUND when the file is gone.
func (s *FileService) DownloadSigned(ctx context.Context, token string) (*platformv1.FileMetadata, []byte, error) {
	g, err := s.sig.verify(ctx, token, grantDownload)
	if err != nil {
		return nil, nil, err
	}
	f, data, err := s.st.GetFileContent(ctx, g.Org, g.File)
	if err != nil {
		return nil, nil, fileStoreError(err, g.Org, g.File)
	}
	return fileProto(f), data, nil
}
