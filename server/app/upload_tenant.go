package app

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/transport/auth"
)

// uploadTenant names the organization of an upload for the gateway's
// per-organization share of upload slots (gateway.Options.UploadTenant),
// from what the chain will check anyway: a signed upload URL's token, or
// the API key (Authorization: Bearer, x-api-key). An upload whose
// credentials do not check out is "": such uploads share one
// organization's share, so that unauthenticated bodies cannot take every
// slot either.
func uploadTenant(keyAuth *auth.KeyAuth, files *server.FileService) func(*http.Request) string {
	return func(r *http.Request) string {
		if tok, ok := strings.CutPrefix(r.URL.Path, "/files/upload/"); ok {
			org, _ := files.UploadOrganization(r.Context(), tok)
			return org
		}
		return keyOrganization(r.Context(), keyAuth, r.Header.Get("x-api-key"), r.Header.Get("Authorization"))
	}
}

// grpcUploadTenant names the organization of a native gRPC upload for the
// admission's per-organization share (admission.Admission.WithTenants),
// from the API key of its metadata (authorization: Bearer, x-api-key) as
// uploadTenant does. The shared port hands the tap an HTTP header as the
// metadata (canonical keys), the gRPC server lower-case ones: both are read.
func grpcUploadTenant(keyAuth *auth.KeyAuth) func(context.Context, metadata.MD) string {
	return func(ctx context.Context, md metadata.MD) string {
		get := func(name string) string {
			for k, v := range md {
				if strings.EqualFold(k, name) && len(v) > 0 {
					return v[0]
				}
			}
			return ""
		}
		return keyOrganization(ctx, keyAuth, get("x-api-key"), get("authorization"))
	}
}

// keyOrganization is the organization of the API key of an x-api-key or an
// Authorization (Bearer) header, "" when there is none or it does not
// check out.
func keyOrganization(ctx context.Context, keyAuth *auth.KeyAuth, xAPIKey, authorization string) string {
	key := strings.TrimSpace(xAPIKey)
	if scheme, tok, ok := strings.Cut(strings.TrimSpace(authorization), " "); ok && strings.EqualFold(scheme, "Bearer") {
		key = strings.TrimSpace(tok)
	}
	if key == "" {
		return ""
	}
	k, err := keyAuth.KeyIdentity(ctx, key)
	if err != nil {
		return ""
	}
	return k.OrganizationID
}
