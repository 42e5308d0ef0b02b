package sqlstore

import (
	"context"

	"github.com/proserun/prose/store"
)

const orgUserSelect = `SELECT ` + userCols + `, m.create_time, m.update_time FROM organization_members m JOIN users u ON u.id = m.user_id`

// ListOrganizationUsers implements store.OrganizationUsers.
func (db *DB) ListOrganizationUsers(ctx context.Context, req store.ListOrganizationUsersRequest) (store.Page[store.WorkspaceUser], error) {
	return db.listMembers(ctx, req.OrganizationID, "", req.Filter, req.OrderBy, req.PageSize, req.PageToken)
}
