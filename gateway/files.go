package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

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
	// multipartFileField is the part that carries the bytes.
	multipartFileField = "file"
	maxFormFieldBytes  = 64 << 10
	maxFormFields      = 32
)

// HandleSignedFiles adds the signed URL routes to mux (from Mux):
//
//	PUT|POST /files/upload/{token}   raw bytes (Content-Type, ?filename=) or
//	                                 multipart/form-data (form fields + part "file");
//	                                 200 {"metadata": FileMetadata}
//	GET      /files/download/{token} the bytes, with Content-Type and
//	                                 Content-Disposition: attachment
//
// maxBytes bounds a file (the service decides the error; one byte more is
// read so that it can tell).
//
// It also replaces the generated routes of FileService.UploadFile and
// DownloadFile with ones that call conn the same way (the interceptors, the
// API key) but carry the raw bytes: the request body is the file (its
// Content-Type the MIME type, ?filename= its name; the JSON decoder cannot
// read it into a google.api.HttpBody), and the receive bound is raised to
// maxBytes (a connection's default is 4 MiB).
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
	if err := mux.HandlePath(http.MethodGet, FilesDownloadPattern, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		serveDownload(mux, sf, w, r, p["token"])
	}); err != nil {
		return fmt.Errorf("gateway: %s: %w", FilesDownloadPattern, err)
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

func serveUpload(mux *runtime.ServeMux, sf SignedFiles, maxBytes int64, w http.ResponseWriter, r *http.Request, token string) {
	filename := r.URL.Query().Get("filename")
	contentType := r.Header.Get("Content-Type")
	var fields map[string]string
	var content []byte
	mt, params, _ := mime.ParseMediaType(contentType)
	if mt == "multipart/form-data" {
		if params["boundary"] == "" {
			fileError(mux, w, r, badForm("multipart/form-data without a boundary"))
			return
		}
		fields = map[string]string{}
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
					fileError(mux, w, r, badForm(fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)))
					return
				}
				fileError(mux, w, r, badForm("the multipart form is malformed"))
				return
			}
			name := part.FormName()
			if name == multipartFileField {
				if seenFile {
					fileError(mux, w, r, badForm("the form has more than one file part"))
					return
				}
				seenFile = true
				if content, err = readAtMost(part, maxBytes, r.ContentLength); err != nil {
					fileError(mux, w, r, err)
					return
				}
				if part.FileName() != "" {
					filename = part.FileName()
				}
				contentType = part.Header.Get("Content-Type")
				continue
			}
			if len(fields) >= maxFormFields {
				fileError(mux, w, r, badForm("the form has too many fields"))
				return
			}
			if _, dup := fields[name]; dup {
				fileError(mux, w, r, badForm("the form field "+strconv.Quote(name)+" appears twice"))
				return
			}
			v, err := readAtMost(part, maxFormFieldBytes, -1)
			if err != nil {
				fileError(mux, w, r, err)
				return
			}
			if len(v) > maxFormFieldBytes {
				fileError(mux, w, r, badForm("the form field "+strconv.Quote(name)+" is too long"))
				return
			}
			fields[name] = string(v)
		}
		if !seenFile {
			fileError(mux, w, r, badForm("the form has no file part named file"))
			return
		}
	} else {
		var err error
		if content, err = readAtMost(r.Body, maxBytes, r.ContentLength); err != nil {
			fileError(mux, w, r, err)
			return
		}
	}
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
		data, err := readAtMost(r.Body, maxBytes, r.ContentLength)
		if err != nil {
			runtime.HTTPError(ctx, mux, out, w, r, err)
			return
		}
		var md runtime.ServerMetadata
		resp, err := client.UploadFile(ctx, &platformv1.UploadFileRequest{
			OrganizationId: p["organization_id"], Filename: r.URL.Query().Get("filename"),
			Content: &httpbody.HttpBody{ContentType: r.Header.Get("Content-Type"), Data: data},
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
