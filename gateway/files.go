package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// SignedFiles serves signed file URLs, which need no API key: the token in
// the path says what may be done until when. server.FileService implements
// it (the gateway knows nothing of the store). Errors are gRPC statuses,
// rendered in the path's shape (AIP-193 under /files): a malformed token or
// form 400, a tampered or expired one 403.
type SignedFiles interface {
	// UploadSigned stores content under the upload token. filename is the
	// multipart file part's name or the ?filename= query; contentType the
	// part's or the body's Content-Type; fields the other multipart form
	// fields (nil for a raw body).
	UploadSigned(ctx context.Context, token, filename, contentType string, fields map[string]string, content []byte) (*platformv1.FileMetadata, error)
	// DownloadSigned returns the file of a download token.
	DownloadSigned(ctx context.Context, token string) (*platformv1.FileMetadata, []byte, error)
}

// Paths of the signed file routes.
const (
	FilesUploadPattern   = "/files/upload/{token}"
	FilesDownloadPattern = "/files/download/{token}"
	// FilesDownloadNamedPattern is a download URL ending with the file's
	// name (what a run or a browser takes for it); the name is not signed
	// and not read: the token names the file.
	FilesDownloadNamedPattern = "/files/download/{token}/{filename}"
	// multipartFileField is the part that carries the bytes; the reference's
	// UploadFile names it multipartContentField (with the name in a field
	// "filename"), and both are read.
	multipartFileField    = "file"
	multipartContentField = "content"
	maxFormFieldBytes     = 64 << 10
	maxFormFields         = 32
)

// HandleSignedFiles adds the signed URL routes to mux (from Mux):
//
//	PUT|POST /files/upload/{token}   raw bytes (Content-Type, ?filename=) or
//	                                 multipart/form-data (form fields + part "file");
//	                                 200 {"metadata": FileMetadata}
//	GET      /files/download/{token}[/{filename}] the bytes, with Content-Type
//	                                 and Content-Disposition: attachment
//
// maxBytes bounds a file (the service decides the error; one byte more is
// read so that it can tell).
//
// It also replaces the generated routes of FileService.UploadFile and
// DownloadFile with ones that call conn the same way (the interceptors, the
// API key) but carry the raw bytes: the request body is the file (its
// Content-Type the MIME type, ?filename= or the Content-Disposition's
// filename its name), or multipart/form-data with one part "file" (its
// file name and Content-Type; ?filename= wins); the JSON decoder cannot read
// it into a google.api.HttpBody, and the receive bound is raised to maxBytes
// (a connection's default is 4 MiB).
func HandleSignedFiles(mux *runtime.ServeMux, conn grpc.ClientConnInterface, sf SignedFiles, maxBytes int64) error {
	if err := handleDownload(mux, conn); err != nil {
		return fmt.Errorf("gateway: %s: %w", downloadPattern, err)
	}
	if err := handleUpload(mux, conn, maxBytes); err != nil {
		return fmt.Errorf("gateway: %s: %w", uploadPattern, err)
	}
	up := func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		serveUpload(mux, sf, maxBytes, w, r, p["token"])
	}
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		if err := mux.HandlePath(m, FilesUploadPattern, up); err != nil {
			return fmt.Errorf("gateway: %s: %w", FilesUploadPattern, err)
		}
	}
	down := func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		serveDownload(mux, sf, w, r, p["token"])
	}
	for _, pattern := range []string{FilesDownloadPattern, FilesDownloadNamedPattern} {
		if err := mux.HandlePath(http.MethodGet, pattern, down); err != nil {
			return fmt.Errorf("gateway: %s: %w", pattern, err)
		}
	}
	return nil
}

func fileError(mux *runtime.ServeMux, w http.ResponseWriter, r *http.Request, err error) {
	_, out := runtime.MarshalerForRequest(mux, r)
	runtime.HTTPError(r.Context(), mux, out, w, r, err)
}

func badForm(msg string) error { return status.Error(codes.InvalidArgument, msg) }

// readAtMost reads up to max+1 bytes, so that a caller can tell "too large".
// sizeHint (the request's Content-Length, -1 when unknown) sizes the buffer
// once: a 32 MiB upload takes 32 MiB, not the 64 MiB a doubling buffer ends
// at.
func readAtMost(rd io.Reader, max, sizeHint int64) ([]byte, error) {
	n := int64(64 << 10)
	if sizeHint >= 0 {
		n = sizeHint + 1 // one more byte to meet EOF without growing
	}
	n = min(n, max+1)
	buf := make([]byte, 0, n)
	lr := io.LimitReader(rd, max+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow: the hint was short
		}
		m, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit))
		}
		if err != nil {
			return nil, badForm("the request body could not be read")
		}
	}
}

// upload is what an upload request carries.
type upload struct {
	filename, contentType string
	fields                map[string]string // multipart fields but the file (nil: a raw body)
	content               []byte
}

// readUpload reads an upload body: multipart/form-data with one part
// "file" (its file name and Content-Type) and other fields, or the raw
// bytes (the request's Content-Type; the name from ?filename= or the
// Content-Disposition header). ?filename= names the file when the part or
// the header does not.
func readUpload(r *http.Request, maxBytes int64) (upload, error) {
	u := upload{filename: r.URL.Query().Get("filename"), contentType: r.Header.Get("Content-Type")}
	mt, params, _ := mime.ParseMediaType(u.contentType)
	if mt != "multipart/form-data" {
		if u.filename == "" {
			if _, p, err := mime.ParseMediaType(r.Header.Get("Content-Disposition")); err == nil {
				u.filename = p["filename"]
			}
		}
		var err error
		u.content, err = readAtMost(r.Body, maxBytes, r.ContentLength)
		return u, err
	}
	if params["boundary"] == "" {
		return u, badForm("multipart/form-data without a boundary")
	}
	u.fields = map[string]string{}
	seenFile := false
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return u, badForm(fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit))
			}
			return u, badForm("the multipart form is malformed")
		}
		name := part.FormName()
		if name == multipartFileField || name == multipartContentField {
			if seenFile {
				return u, badForm("the form has more than one file part")
			}
			seenFile = true
			if u.content, err = readAtMost(part, maxBytes, r.ContentLength); err != nil {
				return u, err
			}
			if part.FileName() != "" {
				u.filename = part.FileName()
			}
			u.contentType = part.Header.Get("Content-Type")
			continue
		}
		if len(u.fields) >= maxFormFields {
			return u, badForm("the form has too many fields")
		}
		if _, dup := u.fields[name]; dup {
			return u, badForm("the form field " + strconv.Quote(name) + " appears twice")
		}
		v, err := readAtMost(part, maxFormFieldBytes, -1)
		if err != nil {
			return u, err
		}
		if len(v) > maxFormFieldBytes {
			return u, badForm("the form field " + strconv.Quote(name) + " is too long")
		}
		u.fields[name] = string(v)
	}
	if !seenFile {
		return u, badForm("the form has no file part (named content or file)")
	}
	return u, nil
}

func serveUpload(mux *runtime.ServeMux, sf SignedFiles, maxBytes int64, w http.ResponseWriter, r *http.Request, token string) {
	u, err := readUpload(r, maxBytes)
	if err != nil {
		fileError(mux, w, r, err)
		return
	}
	filename, contentType, fields, content := u.filename, u.contentType, u.fields, u.content
	meta, err := sf.UploadSigned(r.Context(), token, filename, contentType, fields, content)
	if err != nil {
		fileError(mux, w, r, err)
		return
	}
	_, out := runtime.MarshalerForRequest(mux, r)
	body, err := out.Marshal(&platformv1.UploadFileResponse{Metadata: meta})
	if err != nil {
		fileError(mux, w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func serveDownload(mux *runtime.ServeMux, sf SignedFiles, w http.ResponseWriter, r *http.Request, token string) {
	meta, data, err := sf.DownloadSigned(r.Context(), token)
	if err != nil {
		fileError(mux, w, r, err)
		return
	}
	h := w.Header()
	ct := meta.GetMimeType()
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": meta.GetFilename()}))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

const uploadPattern = "/api/v1/organizations/{organization_id}/files:upload"

// handleUpload serves FileService.UploadFile with the body as the bytes.
func handleUpload(mux *runtime.ServeMux, conn grpc.ClientConnInterface, maxBytes int64) error {
	client := platformv1.NewFileServiceClient(conn)
	return mux.HandlePath(http.MethodPost, uploadPattern, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		_, out := runtime.MarshalerForRequest(mux, r)
		ctx, err := runtime.AnnotateContext(r.Context(), mux, r, "/prose.platform.v1.FileService/UploadFile", runtime.WithHTTPPathPattern(uploadPattern))
		if err != nil {
			runtime.HTTPError(r.Context(), mux, out, w, r, err)
			return
		}
		u, err := readUpload(r, maxBytes)
		if name, ok := u.fields["filename"]; ok && err == nil {
			// The reference's form: parts content and filename.
			u.filename = name
			delete(u.fields, "filename")
		}
		if err == nil && len(u.fields) > 0 {
			keys := make([]string, 0, len(u.fields))
			for k := range u.fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			err = badForm("unexpected form fields: " + strings.Join(keys, ", ") + "; send a file part named content (or file) and a field filename")
		}
		if err != nil {
			runtime.HTTPError(ctx, mux, out, w, r, err)
			return
		}
		if q := r.URL.Query().Get("filename"); q != "" {
			u.filename = q // the query names the file whatever the part says
		}
		var md runtime.ServerMetadata
		resp, err := client.UploadFile(ctx, &platformv1.UploadFileRequest{
			OrganizationId: p["organization_id"], Filename: u.filename,
			Content: &httpbody.HttpBody{ContentType: u.contentType, Data: u.content},
		}, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
		ctx = runtime.NewServerMetadataContext(ctx, md)
		if err != nil {
			runtime.HTTPError(ctx, mux, out, w, r, err)
			return
		}
		runtime.ForwardResponseMessage(ctx, mux, out, w, r, resp)
	})
}

const downloadPattern = "/api/v1/organizations/{organization_id}/files/{file}:download"

// handleDownload replaces the generated route of FileService.DownloadFile,
// whose response is the file's raw bytes.
func handleDownload(mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
	client := platformv1.NewFileServiceClient(conn)
	return mux.HandlePath(http.MethodGet, downloadPattern, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		_, out := runtime.MarshalerForRequest(mux, r)
		ctx, err := runtime.AnnotateContext(r.Context(), mux, r, "/prose.platform.v1.FileService/DownloadFile", runtime.WithHTTPPathPattern(downloadPattern))
		if err != nil {
			runtime.HTTPError(r.Context(), mux, out, w, r, err)
			return
		}
		var md runtime.ServerMetadata
		resp, err := client.DownloadFile(ctx, &platformv1.DownloadFileRequest{OrganizationId: p["organization_id"], File: p["file"]},
			grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
		ctx = runtime.NewServerMetadataContext(ctx, md)
		if err != nil {
			runtime.HTTPError(ctx, mux, out, w, r, err)
			return
		}
		runtime.ForwardResponseMessage(ctx, mux, out, w, r, resp)
	})
}
