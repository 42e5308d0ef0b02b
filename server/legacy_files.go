package server

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	legacyv1 "github.com/proserun/prose/gen/prose/legacy/v1"
	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Legacy file uploads. Both make a file record without bytes and a signed
// upload URL for them (15 minutes):
//
//   - POST /v1/upload {file_name, content_type} → {upload_url, blob_url,
//     expires_at}: PUT or POST the raw bytes to upload_url. blob_url is a
//     signed download URL of the file (7 days): it goes into the invoke
//     body's attachments list, and fetches the bytes without an API key.
//   - POST /v2/files {file_name, agent_id} → {id, upload_url, upload_fields}:
//     POST multipart/form-data to upload_url with every upload_fields entry
//     unchanged and the file part "file". id goes into file_ids.
//
// Run handlers turn a blob URL or file id into a file input with
// FileInput.

const blobURLLifetime = maxURLLifetime

// Upload makes a file record and the URL to upload its bytes to.
func (s *LegacyV1) Upload(ctx context.Context, req *legacyv1.UploadRequest) (*legacyv1.UploadResponse, error) {
	org := legacyCaller(ctx)
	if org == "" {
		return nil, transport.Unauthenticated(transport.ReasonAPIKeyMissing, transport.MissingCredentialDescription)
	}
	ws, err := newFileWorkspace(ctx, store.PermRunsCreate)
	if err != nil {
		return nil, err
	}
	if err := checkFilename("file_name", req.GetFileName()); err != nil {
		return nil, err
	}
	if s.st == nil {
		return nil, errStoreUnavailable
	}
	sig := signerFor(s.st)
	f, err := s.st.CreateFile(ctx, store.File{
		OrganizationID: org, WorkspaceID: ws, Filename: req.GetFileName(), MimeType: mimeTypeFor(req.GetContentType(), req.GetFileName()),
	}, nil, false)
	if err != nil {
		return nil, fileStoreError(err, org, "")
	}
	exp := sig.now().Add(defaultURLLifetime)
	tok, err := sig.sign(ctx, fileGrant{Op: grantUpload, Org: org, File: f.ID, MimeType: f.MimeType, Exp: exp.Unix()})
	if err != nil {
		return nil, err
	}
	base := baseURL(ctx, "")
	blob, err := signedDownloadURL(ctx, sig, base, org, f.ID, f.Filename, blobURLLifetime)
	if err != nil {
		return nil, err
	}
	return &legacyv1.UploadResponse{
		UploadUrl: base + SignedUploadPath + tok,
		BlobUrl:   blob,
		ExpiresAt: time.Unix(exp.Unix(), 0).UTC().Format(time.RFC3339),
	}, nil
}

// CreateFile makes a file record of the agent (workspace) and the form to
// upload its bytes with.
func (s *LegacyV2) CreateFile(ctx context.Context, req *legacyv2.CreateFileRequest) (*legacyv2.CreateFileResponse, error) {
	org, err := v2Org(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkFilename("file_name", req.GetFileName()); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	ws := req.GetAgentId()
	f, err := s.st.CreateFile(ctx, store.File{
		OrganizationID: org, WorkspaceID: ws, Filename: req.GetFileName(), MimeType: mimeTypeFor("", req.GetFileName()),
	}, nil, false)
	if errors.Is(err, store.ErrNotFound) {
		return nil, transport.NotFound(ReasonWorkspaceNotFound, "agents/"+ws)
	}
	if err != nil {
		return nil, fileStoreError(err, org, "")
	}
	sig := signerFor(s.st)
	g := fileGrant{Op: grantUpload, Org: org, File: f.ID, MimeType: f.MimeType, Form: true, Exp: sig.now().Add(defaultURLLifetime).Unix()}
	tok, err := sig.sign(ctx, g)
	if err != nil {
		return nil, err
	}
	fields, err := uploadForm(ctx, sig, tok, g)
	if err != nil {
		return nil, err
	}
	return &legacyv2.CreateFileResponse{Id: f.ID, UploadUrl: baseURL(ctx, "") + SignedUploadPath + tok, UploadFields: fields}, nil
}

// ResolveFile finds the file a reference names in organization org: a file
// id (v2 file_ids), a resource name organizations/{o}/files/{f}, a blob URL
// or signed download URL (v1 attachments; its signature is checked, not its
// expiry), or an /api/v1/…/files/{f}:download URL. NOT_FOUND when it names
// no file of org; INVALID_ARGUMENT when it cannot be read.
func ResolveFile(ctx context.Context, st store.Store, org, ref string) (store.File, error) {
	ref = strings.TrimSpace(ref)
	id := ref
	if u, err := url.Parse(ref); err == nil && u.Scheme != "" && u.Host != "" {
		switch {
		case strings.HasPrefix(u.Path, SignedDownloadPath):
			g, err := signerFor(st).verifyAnyTime(ctx, signedToken(strings.TrimPrefix(u.Path, SignedDownloadPath)), grantDownload)
			if err != nil {
				return store.File{}, err
			}
			if g.Org != org {
				return store.File{}, transport.NotFound(ReasonFileNotFound, ref)
			}
			id = g.File
		case strings.HasPrefix(u.Path, "/api/v1/"):
			id = strings.TrimSuffix(strings.TrimPrefix(u.Path, "/api/v1/"), ":download")
		default:
			return store.File{}, transport.InvalidArgument(ReasonInvalidField, "not a file URL of this service: "+ref)
		}
	}
	if strings.Contains(id, "/") {
		fileOrg, fileID, ok := names.ParseFile(id)
		if !ok {
			return store.File{}, transport.InvalidArgument(ReasonInvalidField, "not a file reference: "+ref)
		}
		if fileOrg != org {
			return store.File{}, transport.NotFound(ReasonFileNotFound, ref)
		}
		id = fileID
	}
	f, err := st.GetFile(ctx, org, id)
	if err != nil {
		return store.File{}, fileStoreError(err, org, id)
	}
	return f, nil
}

// FileInput returns the run input of a file reference (see ResolveFile): a
// remote file Value whose URL is a signed download URL (7 days), so a book
// can fetch the bytes without an API key, ending with the file's name (a
// remote FileValue carries only the URL: the run takes its last segment for
// the file's name), and the file. FAILED_PRECONDITION FILE_NOT_UPLOADED when the
// bytes have not arrived yet.
func FileInput(ctx context.Context, st store.Store, org, ref string) (*platformv1.Value, store.File, error) {
	return FileInputAt(ctx, st, "", org, ref)
}

// FileInputAt is FileInput with the public origin of signed URLs given
// (empty: taken from the request, as FileOptions.BaseURL).
func FileInputAt(ctx context.Context, st store.Store, base, org, ref string) (*platformv1.Value, store.File, error) {
	f, err := ResolveFile(ctx, st, org, ref)
	if err != nil {
		return nil, store.File{}, err
	}
	if !f.Uploaded {
		return nil, f, transport.FailedPrecondition(ReasonFileNotUploaded, "the file's content has not been uploaded yet", map[string]string{"file": names.File(org, f.ID)})
	}
	u, err := signedDownloadURL(ctx, signerFor(st), baseURL(ctx, base), org, f.ID, f.Filename, blobURLLifetime)
	if err != nil {
		return nil, store.File{}, err
	}
	return &platformv1.Value{Kind: &platformv1.Value_File{File: &platformv1.FileValue{Kind: &platformv1.FileValue_Remote{Remote: u}}}}, f, nil
}
