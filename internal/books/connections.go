package books

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/sync/singleflight"
	"maps"
	"slices"
	"strings"
	"time"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
	"google.golang.org/protobuf/proto"
)

// Limits of a connection's parts (checked on add and update).
const (
	// MaxConnectionNameBytes bounds a connection's name.
	MaxConnectionNameBytes = 200
	// MaxConnectionBytes bounds a connection's configuration, labels and
	// credentials together (their protobuf size).
	MaxConnectionBytes = 64 << 10
)

// ConnectionInput is what a request gives for a connection.
type ConnectionInput struct {
	Name string
	// Auth is the authentication with its credential values; nil: none (on
	// update: unchanged).
	Auth   *bookv1.ConnectionAuthentication
	Config map[string]*platformv1.BdkValue
	Labels []*bookv1.ConnectionLabel
	// discovered is kept from the stored connection on update and upgrade.
	discovered []string
}

// Connection is a connection as a book uses it: its credentials in plain
// text. It lives only for one book call and is never logged or returned.
type Connection struct {
	ID          string
	Name        string
	BookName    string
	BookVersion string
	// AuthID is the authentication method ("" when the connection has none).
	AuthID string
	// Credentials by id, as text.
	Credentials map[string]string
	// Config by key.
	Config map[string]lang.Value
}

// ConfigText returns a configuration value as text ("" when absent).
func (c *Connection) ConfigText(key string) string {
	v, ok := c.Config[key]
	if !ok || !v.IsValid() || v.Kind() == lang.KindNull {
		return ""
	}
	if v.Kind() == lang.KindText {
		return v.AsText()
	}
	return v.String()
}

// Connections keeps the connections of workspaces in a ConnectionStore, with
// their credentials sealed by a Keyring. Reads never carry credential values.
type Connections struct {
	st   ConnectionStore
	keys *Keyring
	reg  *Registry
	now  func() time.Time
	// nw is how discovery and OAuth token exchanges dial (see
	// PublicNetworkOnly).
	nw network
	// refreshes makes one OAuth refresh of concurrent ones per connection.
	refreshes singleflight.Group
	// once records the OAuth states used (SetOnceLedger).
	once OnceLedger
}

// PublicNetworkOnly makes discovery and OAuth token exchanges reach public
// addresses only, as the built-in books do with
// BuiltinOptions.PublicNetworkOnly.
func (c *Connections) PublicNetworkOnly(on bool) { c.nw = network{publicOnly: on} }

// NewConnections returns the connections kept in st, sealed with keys, for
// the books of reg. It makes itself reg's connection resolver, so that
// built-in books find their connections during calls.
func NewConnections(st ConnectionStore, keys *Keyring, reg *Registry) *Connections {
	c := &Connections{st: st, keys: keys, reg: reg, now: time.Now, once: &memoryOnce{}}
	reg.conns = c
	return c
}

func connectionAAD(ws Workspace, id string) []byte {
	return []byte("prose-connection/v1\x00" + ws.OrganizationID + "\x00" + ws.WorkspaceID + "\x00" + id)
}

// Add adds a connection to a book visible in ws.
func (c *Connections) Add(ctx context.Context, ws Workspace, bookName, bookVersion string, in ConnectionInput) (*bookv1.BookConnectionDescriptor, error) {
	b, err := c.reg.Book(ctx, ws, bookName, bookVersion)
	if err != nil {
		return nil, err
	}
	if err := validateConnection(b, in); err != nil {
		return nil, err
	}
	return c.seal(ctx, ws, c.st.NewConnectionID(), b, in, in.Auth, c.st.CreateConnection)
}

// load reads connection id of ws, which must be a connection of version
// bookVersion of book bookName (ErrNotFound otherwise).
func (c *Connections) load(ctx context.Context, ws Workspace, bookName, bookVersion, id string) (ConnectionRecord, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return row, connStoreError(err, id)
	}
	if row.BookName != bookName || row.BookVersion != bookVersion {
		return row, fmt.Errorf("connection %s is a connection of book %s version %s: %w", id, row.BookName, row.BookVersion, ErrNotFound)
	}
	return row, nil
}

// seal seals connection id (in, with auth, checked against book b) and
// writes it with write (the store's create or update), answering what was
// written without credential values.
func (c *Connections) seal(ctx context.Context, ws Workspace, id string, b *bookv1.Book, in ConnectionInput, auth *bookv1.ConnectionAuthentication,
	write func(context.Context, ConnectionRecord) (ConnectionRecord, error)) (*bookv1.BookConnectionDescriptor, error) {
	row, err := c.encode(ws, id, b, in, auth)
	if err != nil {
		return nil, err
	}
	saved, err := write(ctx, row)
	if err != nil {
		return nil, connStoreError(err, in.Name)
	}
	return c.decode(saved)
}

// Update replaces a connection's name (when in.Name is not empty),
// configuration and labels, and its authentication when in.Auth is not nil.
// A credential given without a value keeps its stored value when the
// authentication method stays the same.
func (c *Connections) Update(ctx context.Context, ws Workspace, bookName, bookVersion, id string, in ConnectionInput) (*bookv1.BookConnectionDescriptor, error) {
	row, err := c.load(ctx, ws, bookName, bookVersion, id)
	if err != nil {
		return nil, err
	}
	old, err := c.open(ws, row)
	if err != nil {
		return nil, err
	}
	if in.Name == "" {
		in.Name = row.Name
	}
	auth := in.Auth
	switch {
	case auth == nil:
		auth = old
	case old != nil && auth.GetAuthenticationId() == old.GetAuthenticationId():
		auth = proto.CloneOf(auth)
		for _, cr := range auth.GetAuthenticationCredentials() {
			if cr.GetValue() != nil {
				continue
			}
			for _, oc := range old.GetAuthenticationCredentials() {
				if oc.GetId() == cr.GetId() {
					cr.Value = oc.GetValue()
				}
			}
		}
		// Tokens an authorization issued stay unless the update sends them.
		for _, oc := range old.GetAuthenticationCredentials() {
			if issuedCredential(auth.GetAuthenticationId(), oc.GetId()) &&
				!slices.ContainsFunc(auth.GetAuthenticationCredentials(), func(cr *bookv1.CredentialValue) bool { return cr.GetId() == oc.GetId() }) {
				auth.AuthenticationCredentials = append(auth.AuthenticationCredentials, oc)
			}
		}
	}
	in.Auth = auth
	if prev, err := decodeDescriptor(row); err == nil {
		in.discovered = prev.GetDiscovered()
	}
	b, err := c.reg.Book(ctx, ws, bookName, bookVersion)
	if err != nil {
		return nil, err
	}
	if err := validateConnection(b, in); err != nil {
		return nil, err
	}
	return c.seal(ctx, ws, id, b, in, auth, c.st.UpdateConnection)
}

// Get returns a connection of ws without credential values.
func (c *Connections) Get(ctx context.Context, ws Workspace, id string) (*bookv1.BookConnectionDescriptor, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return nil, connStoreError(err, id)
	}
	return c.decode(row)
}

// List returns the connections of ws ordered by id, without credential
// values.
func (c *Connections) List(ctx context.Context, ws Workspace) ([]*bookv1.BookConnectionDescriptor, error) {
	rows, err := c.st.ListConnections(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := make([]*bookv1.BookConnectionDescriptor, 0, len(rows))
	for _, r := range rows {
		d, err := c.decode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Delete removes a connection of ws.
func (c *Connections) Delete(ctx context.Context, ws Workspace, id string) error {
	return connStoreError(c.st.DeleteConnection(ctx, ws, id), id)
}

// Resolve returns the connection of ws named name (or of that id), with its
// credentials, for a call of book bookName. ErrNotFound when ws has no such
// connection or it belongs to another book.
func (c *Connections) Resolve(ctx context.Context, ws Workspace, bookName, name string) (*Connection, error) {
	rows, err := c.st.ListConnections(ctx, ws)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(rows, func(r ConnectionRecord) bool { return r.Name == name })
	if i < 0 {
		i = slices.IndexFunc(rows, func(r ConnectionRecord) bool { return r.ID == name })
	}
	if i < 0 {
		return nil, fmt.Errorf("this workspace has no connection named %q: %w", name, ErrNotFound)
	}
	row := rows[i]
	if row.BookName != bookName {
		return nil, fmt.Errorf("the connection %q is a connection of the %s book, not of the %s book: %w", name, row.BookName, bookName, ErrNotFound)
	}
	return c.fromRecord(ws, row, name)
}

// fromRecord is the connection of row with its credentials (name is how the
// caller named it, for errors).
func (c *Connections) fromRecord(ws Workspace, row ConnectionRecord, name string) (*Connection, error) {
	auth, err := c.open(ws, row)
	if err != nil {
		return nil, err
	}
	d, err := decodeDescriptor(row)
	if err != nil {
		return nil, err
	}
	out := &Connection{ID: row.ID, Name: row.Name, BookName: row.BookName, BookVersion: row.BookVersion,
		AuthID: auth.GetAuthenticationId(), Credentials: map[string]string{}, Config: map[string]lang.Value{}}
	for _, cr := range auth.GetAuthenticationCredentials() {
		v, err := FromBdkValue(cr.GetValue())
		if err != nil {
			return nil, fmt.Errorf("credential %q of connection %q: %w", cr.GetId(), name, err)
		}
		out.Credentials[cr.GetId()] = plainText(v)
	}
	for k, bv := range d.GetConfigMap() {
		v, err := FromBdkValue(bv)
		if err != nil {
			return nil, fmt.Errorf("configuration %q of connection %q: %w", k, name, err)
		}
		out.Config[k] = v
	}
	return out, nil
}

func plainText(v lang.Value) string {
	switch v.Kind() {
	case lang.KindText:
		return v.AsText()
	case lang.KindNull:
		return ""
	}
	return v.String()
}

// encode makes the row: the descriptor without credential values and the
// sealed authentication.
func (c *Connections) encode(ws Workspace, id string, b *bookv1.Book, in ConnectionInput, auth *bookv1.ConnectionAuthentication) (ConnectionRecord, error) {
	d := &bookv1.BookConnectionDescriptor{
		BookName: b.GetName(), BookVersion: b.GetVersion(), ConnectionId: id, ConnectionName: in.Name,
		Labels: in.Labels, ConfigMap: in.Config, Endpoint: b.GetEndpoint(), Discovered: in.discovered,
	}
	if auth != nil {
		shown := &bookv1.ConnectionAuthentication{AuthenticationId: auth.GetAuthenticationId()}
		for _, cr := range auth.GetAuthenticationCredentials() {
			shown.AuthenticationCredentials = append(shown.AuthenticationCredentials, &bookv1.CredentialValue{Id: cr.GetId()})
		}
		d.Authentication = shown
	}
	desc, err := proto.MarshalOptions{Deterministic: true}.Marshal(d)
	if err != nil {
		return ConnectionRecord{}, err
	}
	var sealed []byte
	if auth != nil {
		plain, err := proto.MarshalOptions{Deterministic: true}.Marshal(auth)
		if err != nil {
			return ConnectionRecord{}, err
		}
		if sealed, err = c.keys.Seal(plain, connectionAAD(ws, id)); err != nil {
			return ConnectionRecord{}, err
		}
	}
	if len(desc)+len(sealed) > MaxConnectionBytes {
		return ConnectionRecord{}, fmt.Errorf("%w: the connection takes %d bytes, the limit is %d", ErrInvalidArgument, len(desc)+len(sealed), MaxConnectionBytes)
	}
	return ConnectionRecord{Workspace: ws, ID: id,
		BookName: b.GetName(), BookVersion: b.GetVersion(), Name: in.Name, Descriptor: desc, Secret: sealed}, nil
}

func (c *Connections) open(ws Workspace, row ConnectionRecord) (*bookv1.ConnectionAuthentication, error) {
	plain, err := c.keys.Open(row.Secret, connectionAAD(ws, row.ID))
	if err != nil {
		return nil, fmt.Errorf("connection %q: %w", row.Name, err)
	}
	if plain == nil {
		return nil, nil
	}
	auth := &bookv1.ConnectionAuthentication{}
	if err := proto.Unmarshal(plain, auth); err != nil {
		return nil, fmt.Errorf("connection %q: stored credentials: %w", row.Name, err)
	}
	return auth, nil
}

func decodeDescriptor(row ConnectionRecord) (*bookv1.BookConnectionDescriptor, error) {
	d := &bookv1.BookConnectionDescriptor{}
	if err := proto.Unmarshal(row.Descriptor, d); err != nil {
		return nil, fmt.Errorf("connection %q: stored descriptor: %w", row.Name, err)
	}
	return d, nil
}

// decode is the descriptor a read returns: no credential values, and the
// status of a connection that passed validation.
func (c *Connections) decode(row ConnectionRecord) (*bookv1.BookConnectionDescriptor, error) {
	d, err := decodeDescriptor(row)
	if err != nil {
		return nil, err
	}
	d.ConnectionId, d.ConnectionName, d.BookName, d.BookVersion = row.ID, row.Name, row.BookName, row.BookVersion
	for _, cr := range d.GetAuthentication().GetAuthenticationCredentials() {
		cr.Value = nil // never stored, and never shown
	}
	when := row.UpdateTime.UTC().Format(time.RFC3339)
	cond := func(t bookv1.BookConnectionConditionType) *bookv1.BookConnectionCondition {
		return &bookv1.BookConnectionCondition{Type: t, Status: bookv1.BookConnectionConditionStatus_BOOK_CONNECTION_CONDITION_STATUS_TRUE, LastTransitionTime: when}
	}
	d.Status = &bookv1.BookConnectionStatus{
		State:         bookv1.BookConnectionState_BOOK_CONNECTION_STATE_READY,
		StateCategory: bookv1.BookConnectionStateCategory_BOOK_CONNECTION_STATE_CATEGORY_READY,
		LastUpdated:   when,
		Conditions: []*bookv1.BookConnectionCondition{
			cond(bookv1.BookConnectionConditionType_BOOK_CONNECTION_CONDITION_TYPE_BOOK_VALID),
			cond(bookv1.BookConnectionConditionType_BOOK_CONNECTION_CONDITION_TYPE_AUTHENTICATION_VALID),
			cond(bookv1.BookConnectionConditionType_BOOK_CONNECTION_CONDITION_TYPE_CONFIGURATION_VALID),
		},
	}
	return d, nil
}

// validateConnection checks a connection against its book: a name; an
// authentication method the book lists, with exactly its credentials, each
// with a value; configuration keys the book lists, with values of their
// types. A book that lists no authentications or configurations takes any.
func validateConnection(b *bookv1.Book, in ConnectionInput) error {
	var problems []string
	switch {
	case strings.TrimSpace(in.Name) == "":
		problems = append(problems, "connection_name is required")
	case len(in.Name) > MaxConnectionNameBytes:
		problems = append(problems, fmt.Sprintf("connection_name has %d bytes, the limit is %d", len(in.Name), MaxConnectionNameBytes))
	case strings.HasPrefix(in.Name, ConnectionPlaceholder("")):
		problems = append(problems, fmt.Sprintf("connection_name must not start with %q (the placeholder of a removed connection)", ConnectionPlaceholder("")))
	case strings.Contains(in.Name, `"`):
		problems = append(problems, `connection_name must not contain '"' (code names it in quotes)`)
	}
	if a := in.Auth; a != nil {
		if a.GetAuthenticationId() == "" {
			problems = append(problems, "authentication.authentication_id is required")
		}
		seen := map[string]bool{}
		for i, cr := range a.GetAuthenticationCredentials() {
			switch {
			case cr.GetId() == "":
				problems = append(problems, fmt.Sprintf("authentication.authentication_credentials[%d].id is required", i))
			case seen[cr.GetId()]:
				problems = append(problems, fmt.Sprintf("credential %q is given twice", cr.GetId()))
			case cr.GetValue() == nil:
				problems = append(problems, fmt.Sprintf("credential %q has no value", cr.GetId()))
			}
			seen[cr.GetId()] = true
		}
		if methods := b.GetAuthentications(); len(methods) > 0 && a.GetAuthenticationId() != "" {
			var ids []string
			var method *bookv1.CustomAuthentication
			for _, m := range methods {
				ids = append(ids, m.GetCustom().GetId())
				if m.GetCustom().GetId() == a.GetAuthenticationId() {
					method = m.GetCustom()
				}
			}
			if method == nil {
				problems = append(problems, fmt.Sprintf("authentication %q is not one of the book's (%s)", a.GetAuthenticationId(), strings.Join(ids, ", ")))
			} else {
				want := map[string]bool{}
				for _, cr := range method.GetCredentials() {
					want[cr.GetId()] = true
					if !seen[cr.GetId()] {
						problems = append(problems, fmt.Sprintf("authentication %q needs the credential %q", method.GetId(), cr.GetId()))
					}
				}
				for id := range seen {
					if !want[id] && !issuedCredential(method.GetId(), id) {
						problems = append(problems, fmt.Sprintf("authentication %q has no credential %q", method.GetId(), id))
					}
				}
			}
		}
	}
	if confs := b.GetConfigurations(); len(confs) > 0 {
		known := map[string]*bookv1.Concept{}
		for _, cc := range confs {
			known[ConceptName(cc)] = cc
		}
		for k, v := range in.Config {
			cc, ok := known[k]
			if !ok {
				names := make([]string, 0, len(known))
				for n := range known {
					names = append(names, n)
				}
				slices.Sort(names)
				problems = append(problems, fmt.Sprintf("config_map has the key %q; the book's are %s", k, strings.Join(names, ", ")))
				continue
			}
			if msg := checkScalar(cc, v); msg != "" {
				problems = append(problems, fmt.Sprintf("config_map[%q] %s", k, msg))
			}
		}
	}
	for i, l := range in.Labels {
		if l.GetKey() == "" {
			problems = append(problems, fmt.Sprintf("labels[%d].key is required", i))
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

func checkScalar(c *bookv1.Concept, v *platformv1.BdkValue) string {
	switch c.GetType().GetScalarType() {
	case bookv1.ConceptScalarType_ConceptScalarTypeNumber:
		if _, ok := v.GetKind().(*platformv1.BdkValue_NumberValue); !ok {
			return "must be a number_value"
		}
	case bookv1.ConceptScalarType_ConceptScalarTypeBoolean:
		if _, ok := v.GetKind().(*platformv1.BdkValue_BooleanValue); !ok {
			return "must be a boolean_value"
		}
	case bookv1.ConceptScalarType_ConceptScalarTypeText:
		switch v.GetKind().(type) {
		case *platformv1.BdkValue_TextValue, *platformv1.BdkValue_OffloadableTextValue:
		default:
			return "must be a text_value"
		}
	}
	return ""
}

// connStoreError gives the error of a ConnectionStore on a connection named
// or identified by what: its message names the connection when the name is
// taken already.
func connStoreError(err error, what string) error {
	if errors.Is(err, ErrAlreadyExists) {
		return fmt.Errorf("a connection named %q exists in this workspace already: %w", what, err)
	}
	return err
}

// ErrResourceExhausted is returned when a quota is reached (connections per workspace).
var ErrResourceExhausted = errors.New("resource exhausted")

type callKey struct{}

type callInfo struct {
	reg *Registry
	ws  Workspace
	// callID names the run's step (RunBooks.CallID; "" when the caller has
	// none): the same after a crash, so a call made again carries it again.
	callID string
}

// callIDOf is the call id of the built-in call running in ctx ("": none).
func callIDOf(ctx context.Context) string {
	ci, _ := ctx.Value(callKey{}).(callInfo)
	return ci.callID
}

// connection returns the connection name of the book bookName for the
// built-in call running in ctx.
func connection(ctx context.Context, bookName, name string) (*Connection, error) {
	ci, ok := ctx.Value(callKey{}).(callInfo)
	if !ok || ci.reg.conns == nil {
		return nil, &InputError{Message: fmt.Sprintf("connections are not available here, so the connection %q cannot be used", name)}
	}
	c, err := ci.reg.conns.Resolve(ctx, ci.ws, bookName, name)
	if errors.Is(err, ErrNotFound) {
		return nil, &InputError{Message: err.Error()}
	}
	return c, err
}

// refreshOAuth refreshes the access token of the OAuth connection conn for
// the built-in call running in ctx (Connections.RefreshOAuth). A failure is
// an error of the call naming the connection and the token url's answer,
// never a secret.
func refreshOAuth(ctx context.Context, conn *Connection) (*Connection, error) {
	ci, ok := ctx.Value(callKey{}).(callInfo)
	if !ok || ci.reg.conns == nil {
		return nil, &InputError{Message: fmt.Sprintf("connections are not available here, so the connection %q cannot refresh its access token", conn.Name)}
	}
	fresh, err := ci.reg.conns.RefreshOAuth(ctx, ci.ws, conn.ID, conn.Credentials[oauthAccessToken])
	if err != nil {
		return nil, errors.New(redact(fmt.Sprintf("the connection %q could not refresh its OAuth access token: %v; authorize it again (PUT …/connections/%s/authorize)", conn.Name, err, conn.ID), conn))
	}
	return fresh, nil
}

// CodeConnections returns the connection names an automation's code gives,
// in order and without repeats: each line of the form
// `the connection is "NAME"` (any indentation and letter case). This is how
// code names a connection for a book call (the call's `with` block), so it
// is what deleting a connection checks.
func CodeConnections(code string) []string {
	var out []string
	for _, line := range strings.Split(code, "\n") {
		l := strings.TrimSpace(line)
		const prefix = "the connection is "
		if len(l) < len(prefix) || !strings.EqualFold(l[:len(prefix)], prefix) {
			continue
		}
		rest := strings.TrimSpace(l[len(prefix):])
		if len(rest) < 2 || rest[0] != '"' {
			continue
		}
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			continue
		}
		name := rest[1 : 1+end]
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// Rekey seals again, with the keyring's first key, every stored connection
// secret that an older key of the keyring sealed (the second half of a key
// rotation). It returns how many it sealed again. A secret no key opens
// stops it with an error naming the connection.
func (c *Connections) Rekey(ctx context.Context) (int, error) {
	return c.st.RekeyConnections(ctx, func(row ConnectionRecord) ([]byte, bool, error) {
		if c.keys.Current(row.Secret) {
			return nil, false, nil
		}
		ws := row.Workspace
		plain, err := c.keys.Open(row.Secret, connectionAAD(ws, row.ID))
		if err != nil {
			return nil, false, fmt.Errorf("connection %s of %s: %w", row.ID, ws, err)
		}
		sealed, err := c.keys.Seal(plain, connectionAAD(ws, row.ID))
		return sealed, err == nil, err
	})
}

// Upgrade moves the connection id of book bookName version bookVersion to
// version newVersion of the same book: it is checked against that version
// (its authentications and configurations) and keeps its id, name,
// credentials, configuration and labels. ErrNotFound when the connection is
// not of that book version or the new version is not visible in ws;
// ErrInvalidArgument when the connection does not fit the new version.
func (c *Connections) Upgrade(ctx context.Context, ws Workspace, bookName, bookVersion, id, newVersion string) (*bookv1.BookConnectionDescriptor, error) {
	row, err := c.load(ctx, ws, bookName, bookVersion, id)
	if err != nil {
		return nil, err
	}
	auth, err := c.open(ws, row)
	if err != nil {
		return nil, err
	}
	d, err := decodeDescriptor(row)
	if err != nil {
		return nil, err
	}
	b, err := c.reg.Book(ctx, ws, bookName, newVersion)
	if err != nil {
		return nil, err
	}
	in := ConnectionInput{Name: row.Name, Auth: auth, Config: d.GetConfigMap(), Labels: d.GetLabels(), discovered: d.GetDiscovered()}
	if err := validateConnection(b, in); err != nil {
		return nil, fmt.Errorf("the connection does not fit version %s of the %s book: %w", newVersion, bookName, err)
	}
	return c.seal(ctx, ws, id, b, in, auth, c.st.UpdateConnection)
}

// Book returns the book version of connection id: the procedures code can
// call with it.
func (c *Connections) Book(ctx context.Context, ws Workspace, id string) (*bookv1.Book, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return nil, connStoreError(err, id)
	}
	return c.reg.Book(ctx, ws, row.BookName, row.BookVersion)
}

// UserInfo tells who connection id acts as, from its configuration only
// (never from a credential): for the email book, its `from` address and
// host. Other books tell nothing (an empty UserInfo).
func (c *Connections) UserInfo(ctx context.Context, ws Workspace, id string) (UserInfo, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return UserInfo{}, connStoreError(err, id)
	}
	return userInfoOf(row)
}

// userInfoOf is UserInfo of a connection's row.
func userInfoOf(row ConnectionRecord) (UserInfo, error) {
	d, err := decodeDescriptor(row)
	if err != nil {
		return UserInfo{}, err
	}
	var out UserInfo
	if row.BookName == "email" {
		text := func(k string) string {
			v, err := FromBdkValue(d.GetConfigMap()[k])
			if err != nil || d.GetConfigMap()[k] == nil {
				return ""
			}
			return plainText(v)
		}
		out.Email = text("from")
		if h := text("host"); h != "" {
			out.Other = map[string]string{"host": h}
		}
	}
	return out, nil
}

// ConnectionCheck is what checking a connection found.
type ConnectionCheck struct {
	// Checked: the book checks connections remotely (databases, email).
	Checked bool
	// Reached: the system answered and took the credentials.
	Reached bool
	// Problem: why not (Checked, not Reached), naming no credential.
	Problem string
	// Details: what the check learnt, and the connection's user info.
	Details map[string]string
}

// checkedTables is how many tables a databases check names.
const checkedTables = 5

// Check checks connection id against its system without doing anything
// there: the databases book connects and lists tables, a built-in book
// with a Check (email) runs it; other books are not checked remotely. A
// system that cannot be reached is a Problem, not an error.
func (c *Connections) Check(ctx context.Context, ws Workspace, id string) (ConnectionCheck, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return ConnectionCheck{}, connStoreError(err, id)
	}
	info, err := userInfoOf(row)
	if err != nil {
		return ConnectionCheck{}, err
	}
	out := ConnectionCheck{Details: map[string]string{}}
	maps.Copy(out.Details, info.Other)
	if info.Email != "" {
		out.Details["acts as"] = info.Email
	}
	if info.Username != "" {
		out.Details["user"] = info.Username
	}
	check := c.checkOf(row)
	if check == nil {
		return out, nil
	}
	out.Checked = true
	conn, err := c.fromRecord(ws, row, row.Name)
	if err != nil {
		return ConnectionCheck{}, err
	}
	found, err := check(ctx, conn)
	if err != nil {
		out.Problem = redact(err.Error(), conn)
		return out, nil
	}
	out.Reached = true
	maps.Copy(out.Details, found)
	return out, nil
}

// checkOf is how a connection of row's book is checked (nil: it is not).
func (c *Connections) checkOf(row ConnectionRecord) func(context.Context, *Connection) (map[string]string, error) {
	b := c.reg.builtin(row.BookName, row.BookVersion)
	switch {
	case b == nil:
		return nil
	case row.BookName == DatabasesBookName:
		return func(ctx context.Context, conn *Connection) (map[string]string, error) {
			ds, err := databaseTables(ctx, c.nw, conn)
			if err != nil {
				return nil, err
			}
			names := make([]string, 0, checkedTables)
			for _, d := range ds[:min(len(ds), checkedTables)] {
				names = append(names, d.Name)
			}
			if len(ds) > checkedTables {
				names = append(names, fmt.Sprintf("… (%d in all)", len(ds)))
			}
			return map[string]string{"tables": strings.Join(names, ", ")}, nil
		}
	}
	return b.Check
}

// UserInfo is who a connection acts as.
type UserInfo struct {
	Email    string
	Username string
	Other    map[string]string
}

// CodeConnectionUse is one connection an automation's code names, with the
// book whose call names it ("" when no call of a known book encloses it).
type CodeConnectionUse struct {
	Name string
	// Call is the statement whose `with` block names the connection.
	Call string
}

// CodeConnectionUses returns the connections code names, in order and
// without repeats, each with the call statement whose `with` block holds
// the `the connection is "NAME"` line (the nearest line above it that is
// indented less).
func CodeConnectionUses(code string) []CodeConnectionUse {
	lines := strings.Split(code, "\n")
	var out []CodeConnectionUse
	for i, line := range lines {
		names := CodeConnections(line)
		if len(names) == 0 || slices.ContainsFunc(out, func(u CodeConnectionUse) bool { return u.Name == names[0] }) {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		u := CodeConnectionUse{Name: names[0]}
		for j := i - 1; j >= 0; j-- {
			l := lines[j]
			if strings.TrimSpace(l) == "" {
				continue
			}
			if len(l)-len(strings.TrimLeft(l, " \t")) < indent {
				u.Call = strings.TrimSuffix(strings.TrimSpace(l), " with")
				break
			}
		}
		out = append(out, u)
	}
	return out
}

// CallBook returns the book (name and version) whose procedure the call
// statement call calls in ws; ok is false when none or several match.
func (c *Connections) CallBook(ctx context.Context, ws Workspace, call string) (name, version string, ok bool) {
	if call == "" {
		return "", "", false
	}
	m, err := c.reg.Match(ctx, ws, ParseSentence(call))
	if err != nil {
		return "", "", false
	}
	return m.Ref.Book, m.Ref.Version, true
}

// RewriteCodeConnections returns code with every `the connection is "X"`
// line whose X is a key of names changed to name names[X]; the rest of the
// code is kept byte for byte.
func RewriteCodeConnections(code string, names map[string]string) string {
	lines := strings.Split(code, "\n")
	for i, line := range lines {
		found := CodeConnections(line)
		if len(found) == 0 {
			continue
		}
		to, ok := names[found[0]]
		if !ok {
			continue
		}
		start := strings.IndexByte(line, '"')
		end := start + 1 + strings.IndexByte(line[start+1:], '"')
		lines[i] = line[:start+1] + to + line[end:]
	}
	return strings.Join(lines, "\n")
}

// ConnectionPlaceholder is what RemoveAutomationConnections leaves in code
// where a removed connection was named: a name no connection may take
// (names are checked not to start with "prose.connection_name.").
func ConnectionPlaceholder(book string) string { return "prose.connection_name." + book }

// Discoverable is something a connection can reach that discovery may
// record (the databases book: a table or view).
type Discoverable struct {
	Name        string
	Description string
}

// ErrNotDiscoverable is returned by discovery on a connection whose book
// discovers nothing.
var ErrNotDiscoverable = errors.New("the book discovers nothing")

// ErrDiscovery wraps a failure to reach the connection's system during
// discovery (its message names no credential).
var ErrDiscovery = errors.New("discovery failed")

// discoverables lists what the connection id can reach, with its opened
// connection.
func (c *Connections) discoverables(ctx context.Context, ws Workspace, id string) ([]Discoverable, ConnectionRecord, error) {
	row, err := c.st.GetConnection(ctx, ws, id)
	if err != nil {
		return nil, row, connStoreError(err, id)
	}
	if row.BookName != DatabasesBookName || !c.reg.IsBuiltin(row.BookName, row.BookVersion) {
		return nil, row, fmt.Errorf("%w: the %s book of connection %q", ErrNotDiscoverable, row.BookName, row.Name)
	}
	conn, err := c.fromRecord(ws, row, row.Name)
	if err != nil {
		return nil, row, err
	}
	ds, err := databaseTables(ctx, c.nw, conn)
	if err != nil {
		return nil, row, fmt.Errorf("%w: %s", ErrDiscovery, redact(err.Error(), conn))
	}
	return ds, row, nil
}

// Discoverables lists what connection id can reach whose name contains
// search (any letter case; "" for all), from offset, at most limit (0: all).
func (c *Connections) Discoverables(ctx context.Context, ws Workspace, id, search string, offset, limit uint64) ([]Discoverable, error) {
	all, _, err := c.discoverables(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	search = strings.ToLower(search)
	all = slices.DeleteFunc(all, func(d Discoverable) bool { return !strings.Contains(strings.ToLower(d.Name), search) })
	if offset >= uint64(len(all)) {
		return nil, nil
	}
	all = all[offset:]
	if limit > 0 && limit < uint64(len(all)) {
		all = all[:limit]
	}
	return all, nil
}

// SetDiscovered records what of connection id's discoverables are
// discovered (the connection's `discovered`), replacing what was; each
// must be one of its discoverables (ErrInvalidArgument).
func (c *Connections) SetDiscovered(ctx context.Context, ws Workspace, id string, what []string) error {
	all, row, err := c.discoverables(ctx, ws, id)
	if err != nil {
		return err
	}
	var unknown []string
	for _, w := range what {
		if !slices.ContainsFunc(all, func(d Discoverable) bool { return d.Name == w }) {
			unknown = append(unknown, fmt.Sprintf("%q", w))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: the connection %q cannot discover %s", ErrInvalidArgument, row.Name, strings.Join(unknown, ", "))
	}
	d, err := decodeDescriptor(row)
	if err != nil {
		return err
	}
	d.Discovered = slices.Compact(slices.Sorted(slices.Values(what)))
	if row.Descriptor, err = (proto.MarshalOptions{Deterministic: true}).Marshal(d); err != nil {
		return err
	}
	if len(row.Descriptor)+len(row.Secret) > MaxConnectionBytes {
		return fmt.Errorf("%w: the connection would take %d bytes, the limit is %d", ErrInvalidArgument, len(row.Descriptor)+len(row.Secret), MaxConnectionBytes)
	}
	_, err = c.st.UpdateConnection(ctx, row)
	return connStoreError(err, row.Name)
}
