package testenv

import (
	"fmt"
	"testing"

	"github.com/proserun/prose/internal/books"
)

// TriggersPath adds a connection named name to the trigger book book
// (webhook, nats, rabbitmq or mqtt, version books.TriggerBookVersion) of
// the workspace at wsPath (WsPath or another workspace's) and returns the
// path that makes trigger instances on it, with the connection's id.
func (e *Env) TriggersPath(t *testing.T, wsPath, book, name string) (path, connectionID string) {
	t.Helper()
	base := wsPath + "/books/" + book + "/" + books.TriggerBookVersion + "/connections"
	c := e.API(t, "POST", base, fmt.Sprintf(`{"connection_name": %q}`, name), 200)
	id := fmt.Sprint(Field(c, "book_connection_descriptor.connection_id"))
	return base + "/" + id + "/triggers", id
}
