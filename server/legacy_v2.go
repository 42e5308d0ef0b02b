package server

import (
	"google.golang.org/grpc/codes"

	"context"

	legacyv2 "github.com/proserun/prose/gen/prose/legacy/v2"
)

// Version is the version of the service, set at build time with
// -ldflags "-X github.com/proserun/prose/server.Version=…".
var Version = "dev"

// Pinger reports whether a dependency (the database) answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// LegacyV2 implements the x-api-key interface, version 2.
type LegacyV2 struct {
	legacyv2.UnimplementedLegacyServiceServer
	db Pinger
}

// NewLegacyV2 returns the v2 service; db may be nil when there is none to check.
func NewLegacyV2(db Pinger) *LegacyV2 { return &LegacyV2{db: db} }

// Health reports "ok" when the database answers, and UNAVAILABLE when it does not.
func (s *LegacyV2) Health(ctx context.Context, _ *legacyv2.HealthRequest) (*legacyv2.HealthResponse, error) {
	if s.db != nil {
		if err := s.db.Ping(ctx); err != nil {
			return nil, NewError(codes.Unavailable, "DATABASE_UNAVAILABLE", "the database does not answer").Err()
		}
	}
	return &legacyv2.HealthResponse{Status: "ok", Version: Version}, nil
}
