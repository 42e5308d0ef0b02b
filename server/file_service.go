package server

import (
	"github.com/proserun/prose/internal/names"
	"net/url"

	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"time"
	"unicode"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// MaxFileBytes bounds a file's size (32 MiB). Larger uploads are
// INVALID_ARGUMENT FILE_TOO_LARGE; bodies over the gateway's upload bound
// (40 MiB) are refused with 413.
const MaxFileBytes = 32 << 20

// FileOptions configures NewFileService.
type FileOptions struct {
	// BaseURL is the public origin of the HTTP side for signed URLs
	// ("https://prose.example.com"); empty: the request's host over http.
	BaseURL string
	// MaxBytes bounds a file; 0 means MaxFileBytes.
	MaxBytes int64
	// Now is the clock of URL expiry; nil means time.Now.
	Now func() time.Time
}

// FileService implements prose.platform.v1.FileService over the store:
// files of an organization (organizations/{o}/files/{f}), their bytes in the
// database, and signed URLs (GenerateUploadUrl, GenerateDownloadUrl) that
// work without an API key until they expire. It also serves those URLs for
// the gateway (UploadSigned, DownloadSigned; see gateway.HandleSignedFiles).
type FileService struct {
	platformv1.UnimplementedFileServiceServer
	st   store.Store
	opts FileOptions
	sig  *fileSigner
}

// NewFileService returns the file service.
func NewFileService(st store.Store, opts FileOptions) *FileService {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = MaxFileBytes
	}
	sig := signerFor(st)
	if opts.Now != nil {
		sig = &fileSigner{st: st, now: opts.Now}
	}
	return &FileService{st: st, opts: opts, sig: sig}
}

func fileProto(f store.File) *platformv1.FileMetadata {
	return &platformv1.FileMetadata{
		Name: names.File(f.OrganizationID, f.ID), Filename: f.Filename, MimeType: f.MimeType,
		SizeBytes: f.SizeBytes, CreateTime: timestampOrNil(f.CreateTime),
	}
}

// fileStoreError maps store errors of files to statuses.
func fileStoreError(err error, org, id string) error {
	return storeErrors{name: names.File(org, id), notFound: ReasonFileNotFound, exists: ReasonConflict,
		precondition: ReasonFileNotUploaded, preconditionKey: "file", preconditionMsg: "the file's content has not been uploaded yet"}.status(err)
}

// checkFilename refuses empty, over-long names and names with path
// separators or control characters.
func checkFilename(field, name string) error {
	bad := ""
	switch {
	case strings.TrimSpace(name) == "":
		bad = "is required"
	case len(name) > 255:
		bad = "is longer than 255 bytes"
	case strings.ContainsAny(name, `/\`):
		bad = "must not contain a path separator"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		bad = "must not contain control characters"
	}
	if bad == "" {
		return nil
	}
	msg := field + " " + bad
	return transport.InvalidArgument(ReasonFilenameInvalid, msg, transport.Violation(field, msg))
}

// mimeTypeFor is the given type, else the one of the name's extension,
// else application/octet-stream.
func mimeTypeFor(given, name string) string {
	if given = strings.TrimSpace(given); given != "" {
		return given
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func (s *FileService) tooLarge(n int) error {
	if int64(n) <= s.opts.MaxBytes {
		return nil
	}
	return tooLarge(s.opts.MaxBytes)
}

func tooLarge(max int64) error {
	msg := fmt.Sprintf("the file is larger than the limit of %d bytes (%d MiB)", max, max>>20)
	return transport.NewError(codes.InvalidArgument, ReasonFileTooLarge, msg).
		Meta("max_bytes", fmt.Sprint(max)).Violations(transport.Violation("content", msg)).Err()
}

func fileID(s string) string { return names.ID(s) }

// UploadFile stores the request's bytes as a new file.
func (s *FileService) UploadFile(ctx context.Context, req *platformv1.UploadFileRequest) (*platformv1.UploadFileResponse, error) {
	if err := checkFilename("filename", req.GetFilename()); err != nil {
		return nil, err
	}
	data := req.GetContent().GetData()
	if err := s.tooLarge(len(data)); err != nil {
		return nil, err
	}
	ws, err := newFileWorkspace(ctx, store.PermRunsCreate)
	if err != nil {
		return nil, err
	}
	f, err := s.st.CreateFile(ctx, store.File{
		OrganizationID: req.GetOrganizationId(), WorkspaceID: ws, Filename: req.GetFilename(),
		MimeType: mimeTypeFor(usableType(req.GetContent().GetContentType()), req.GetFilename()),
	}, data, true)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, transport.NotFound(ReasonOrganizationNotFound, names.Organization(req.GetOrganizationId()))
		}
		return nil, fileStoreError(err, req.GetOrganizationId(), "")
	}
	return &platformv1.UploadFileResponse{Metadata: fileProto(f)}, nil
}

// DownloadFile returns a file's bytes with its MIME type.
func (s *FileService) DownloadFile(ctx context.Context, req *platformv1.DownloadFileRequest) (*httpbody.HttpBody, error) {
	org, id := req.GetOrganizationId(), fileID(req.GetFile())
	if _, err := s.fileFor(ctx, org, id, store.PermRunsGet); err != nil {
		return nil, err
	}
	f, data, err := s.st.GetFileContent(ctx, org, id)
	if err != nil {
		return nil, fileStoreError(err, org, id)
	}
	return &httpbody.HttpBody{ContentType: f.MimeType, Data: data}, nil
}

// GetFileMetadata returns a file's metadata.
func (s *FileService) GetFileMetadata(ctx context.Context, req *platformv1.GetFileMetadataRequest) (*platformv1.FileMetadata, error) {
	org, id := req.GetOrganizationId(), fileID(req.GetFile())
	f, err := s.fileFor(ctx, org, id, store.PermRunsGet)
	if err != nil {
		return nil, err
	}
	return fileProto(f), nil
}

// DeleteFile deletes a file.
func (s *FileService) DeleteFile(ctx context.Context, req *platformv1.DeleteFileRequest) (*emptypb.Empty, error) {
	org, id := req.GetOrganizationId(), fileID(req.GetFile())
	if _, err := s.fileFor(ctx, org, id, store.PermRunsCreate); err != nil {
		return nil, err
	}
	if err := s.st.DeleteFile(ctx, org, id); err != nil {
		return nil, fileStoreError(err, org, id)
	}
	return &emptypb.Empty{}, nil
}

// GenerateUploadUrl makes a URL that accepts one file per PUT or POST (raw
// bytes with ?filename=, or multipart/form-data with a file part) until it
// expires.
func (s *FileService) GenerateUploadUrl(ctx context.Context, req *platformv1.GenerateUploadUrlRequest) (*platformv1.GenerateUploadUrlResponse, error) { //nolint:revive,staticcheck // the name of the generated FileServiceServer method
	d, err := lifetime(req.GetExpireDuration().AsDuration(), req.GetExpireDuration() != nil)
	if err != nil {
		return nil, err
	}
	if _, err := s.st.GetOrganization(ctx, req.GetOrganizationId()); err != nil {
		return nil, storeStatus(err, ReasonOrganizationNotFound, ReasonConflict, names.Organization(req.GetOrganizationId()))
	}
	ws, err := newFileWorkspace(ctx, store.PermRunsCreate)
	if err != nil {
		return nil, err
	}
	tok, err := s.sig.sign(ctx, fileGrant{Op: grantUpload, Org: req.GetOrganizationId(), Workspace: ws, Exp: s.sig.now().Add(d).Unix()})
	if err != nil {
		return nil, err
	}
	return &platformv1.GenerateUploadUrlResponse{UploadUri: baseURL(ctx, s.opts.BaseURL) + SignedUploadPath + tok}, nil
}

// GenerateDownloadUrl makes a URL that serves a file's bytes until it
// expires.
func (s *FileService) GenerateDownloadUrl(ctx context.Context, req *platformv1.GenerateDownloadUrlRequest) (*platformv1.GenerateDownloadUrlResponse, error) { //nolint:revive,staticcheck // the name of the generated FileServiceServer method
	d, err := lifetime(req.GetExpireDuration().AsDuration(), req.GetExpireDuration() != nil)
	if err != nil {
		return nil, err
	}
	org, id := req.GetOrganizationId(), fileID(req.GetFile())
	// Only a caller who can read the file can mint a URL that reads it.
	f, err := s.fileFor(ctx, org, id, store.PermRunsGet)
	if err != nil {
		return nil, err
	}
	u, err := signedDownloadURL(ctx, s.sig, baseURL(ctx, s.opts.BaseURL), org, id, f.Filename, d)
	if err != nil {
		return nil, err
	}
	return &platformv1.GenerateDownloadUrlResponse{DownloadUri: u}, nil
}

// fileFor reads the metadata of file id of org and checks that the caller
// may use perm on it (requireFile).
func (s *FileService) fileFor(ctx context.Context, org, id, perm string) (store.File, error) {
	f, err := s.st.GetFile(ctx, org, id)
	if err != nil {
		return store.File{}, fileStoreError(err, org, id)
	}
	if err := requireFile(ctx, f, perm); err != nil {
		return store.File{}, err
	}
	return f, nil
}

// signedDownloadURL is a URL that serves file id of org for d without a
// key: {base}/files/download/{token}/{filename}. The file's name, last, is
// what a run and a browser take for the name of a remote file (the token
// alone is signed and names the file; the name segment may be left out).
func signedDownloadURL(ctx context.Context, sig *fileSigner, base, org, id, filename string, d time.Duration) (string, error) {
	tok, err := sig.sign(ctx, fileGrant{Op: grantDownload, Org: org, File: id, Exp: sig.now().Add(d).Unix()})
	if err != nil {
		return "", err
	}
	u := base + SignedDownloadPath + tok
	if filename != "" {
		u += "/" + url.PathEscape(filename)
	}
	return u, nil
}

// signedToken is the token of a signed URL's path after its prefix (the
// file name segment of a download URL cut off).
func signedToken(rest string) string {
	tok, _, _ := strings.Cut(rest, "/")
	return tok
}
