package sqlite

import "context"

// MigrateUpTo applies the migrations up to version v (tests of a
// migration).
func MigrateUpTo(ctx context.Context, s *Store, v int64) error {
	p, err := provider(s.w)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, v)
	return err
}
