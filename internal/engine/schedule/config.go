package schedule

import (
	"google.golang.org/protobuf/proto"

	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// EncodeConfig encodes a schedule's configuration for the store
// (store.Schedule.Config): prose.persist.v1.ScheduleConfig is both what
// the calendar computes on and the stored shape (private to Prose: a
// change to the public ScheduleConfig is never a data migration; the
// server converts the API's message, which it mirrors field by field with
// the same numbers, so rows written as the platform's message before
// migration 00022 read back as they are).
func EncodeConfig(cfg *persistv1.ScheduleConfig) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(cfg)
}

// DecodeConfig reads a stored configuration (see EncodeConfig).
func DecodeConfig(b []byte) (*persistv1.ScheduleConfig, error) {
	cfg := &persistv1.ScheduleConfig{}
	if err := proto.Unmarshal(b, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}
