package schedule

import (
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/engine"
	persistv1 "github.com/proserun/prose/gen/prose/persist/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// EncodeConfig encodes a schedule's configuration for the store
// (store.Schedule.Config) as a prose.persist.v1.ScheduleConfig, the stored
// shape (private to Prose: a change to the public ScheduleConfig is never a
// data migration). It mirrors the platform's message field by field, with
// the same numbers (TestPersistValueMirrorsPlatformValue in engine), so
// rows written as the platform's message before migration 00022 read back
// as they are.
func EncodeConfig(cfg *platformv1.ScheduleConfig) ([]byte, error) {
	p := &persistv1.ScheduleConfig{}
	if err := engine.Mirror(p, cfg); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(p)
}

// DecodeConfig reads a stored configuration (see EncodeConfig).
func DecodeConfig(b []byte) (*platformv1.ScheduleConfig, error) {
	p := &persistv1.ScheduleConfig{}
	if err := proto.Unmarshal(b, p); err != nil {
		return nil, err
	}
	cfg := &platformv1.ScheduleConfig{}
	return cfg, engine.Mirror(cfg, p)
}
