package gateway

import (
	"bytes"
	"net/http"
	"strings"
)

// A server stream that fails before its first message is answered by
// grpc-gateway with the HTTP status of the error and the stream's error
// line, {"error": rpcStatus}. Every other operation answers an error with
// the rpcStatus itself at the top level, and a client cannot tell that the
// stream never started from the body alone; so an error written before any
// stream byte is unwrapped to the plain rpcStatus (application/json). An
// error after the stream started stays its last ndjson line.

var streamErrorPrefix = []byte(`{"error":`)

// streamErrorShape wraps the writer of stream requests (the one server
// stream's path ends in ":stream"; the other requests are left alone, as
// the wrapper costs an allocation) so that a stream's error chunk written
// first, under an error status, loses its wrapper.
func streamErrorShape(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ":stream") {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&streamErrorWriter{ResponseWriter: w}, r)
	})
}

type streamErrorWriter struct {
	http.ResponseWriter
	status int  // the status written; 0 before WriteHeader
	wrote  bool // a body byte was written
}

func (w *streamErrorWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if code >= 400 && w.Header().Get("Content-Type") == NDJSON {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *streamErrorWriter) Write(b []byte) (int, error) {
	if !w.wrote && w.status >= 400 && bytes.HasPrefix(b, streamErrorPrefix) && bytes.HasSuffix(b, []byte("}")) {
		w.wrote = true
		if _, err := w.ResponseWriter.Write(b[len(streamErrorPrefix) : len(b)-1]); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	w.wrote = w.wrote || len(b) > 0
	return w.ResponseWriter.Write(b)
}

// Flush keeps streaming: every ndjson line is flushed as it is written.
func (w *streamErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *streamErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
