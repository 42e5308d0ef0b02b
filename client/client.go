// Package client is a Go client of the Prose platform API over gRPC: it
// dials a server with an API key (TLS or not), retries what is safe to retry
// as a gRPC service config says, and has typed helpers for the daily work:
// Invoke an automation, WaitForRun, ResolveException, StreamEvents.
//
// Values travel as the API's Value messages; the helpers take plain Go and
// JSON values (numbers, strings, booleans, nil, []any, map[string]any,
// json.Number for exact decimals) and convert them, and Plain converts back.
//
// The generated service clients are fields of Client, for every call the
// helpers do not cover.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// DefaultServiceConfig is the gRPC service config a Client dials with
// unless WithServiceConfig replaces it: every call of the platform API is
// retried up to 4 attempts, with backoff from 0.2 s to 2 s, when the server
// answers UNAVAILABLE (it is restarting, or a replica is going away). The
// creating helpers send a request_id, so a retried Invoke starts one run.
const DefaultServiceConfig = `{
  "methodConfig": [{
    "name": [
      {"service": "prose.platform.v1.AutomationService"},
      {"service": "prose.platform.v1.RunService"},
      {"service": "prose.platform.v1.ExceptionService"},
      {"service": "prose.platform.v1.EventService"},
      {"service": "prose.platform.v1.ApiKeyService"},
      {"service": "prose.platform.v1.OrganizationService"},
      {"service": "prose.platform.v1.WorkspaceService"},
      {"service": "prose.platform.v1.FileService"}
    ],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "0.2s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`

// Client is a connection to a Prose server that sends an API key with every
// call. It is safe for concurrent use; Close it when done.
type Client struct {
	conn *grpc.ClientConn

	Automations   platformv1.AutomationServiceClient
	Runs          platformv1.RunServiceClient
	Exceptions    platformv1.ExceptionServiceClient
	Events        platformv1.EventServiceClient
	APIKeys       platformv1.ApiKeyServiceClient
	Organizations platformv1.OrganizationServiceClient
	Workspaces    platformv1.WorkspaceServiceClient
	Files         platformv1.FileServiceClient
	History       platformv1.RunHistoryServiceClient
	GuideEntries  platformv1.GuideEntryServiceClient
	Tests         platformv1.AutomationTestServiceClient
}

type options struct {
	tls           *tls.Config
	serviceConfig string
	dial          []grpc.DialOption
}

// An Option changes how Dial connects.
type Option func(*options)

// WithTLS dials with TLS configured by cfg (nil: the system's roots and
// the address's host name).
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) {
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		o.tls = cfg
	}
}

// WithServiceConfig replaces DefaultServiceConfig (a gRPC service config in
// JSON: retry policies, timeouts, load balancing).
func WithServiceConfig(json string) Option {
	return func(o *options) { o.serviceConfig = json }
}

// WithDialOptions adds gRPC dial options (interceptors, a context dialer).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, opts...) }
}

// Dial connects to the server at address with apiKey. The address is
// host:port (plain HTTP/2, as `prose serve` listens by default),
// http://host:port, or https://host[:port] (TLS with the system's roots; the
// port defaults to 443). WithTLS asks for TLS whatever the address says.
// Dial does not wait for the connection: the first call makes it.
func Dial(address, apiKey string, opts ...Option) (*Client, error) {
	o := options{serviceConfig: DefaultServiceConfig}
	for _, opt := range opts {
		opt(&o)
	}
	target, useTLS, err := parseAddress(address)
	if err != nil {
		return nil, err
	}
	if useTLS && o.tls == nil {
		WithTLS(nil)(&o)
	}
	if strings.TrimSpace(apiKey) == "" {
		return nil, errors.New("client: no API key (create one with `prose init` or `prose keys create`)")
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = credentials.NewTLS(o.tls)
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(bearer{key: apiKey, secure: o.tls != nil}),
		grpc.WithDefaultServiceConfig(o.serviceConfig),
	}, o.dial...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return New(conn), nil
}

// New returns a Client over conn, which must already send the API key (see
// Dial). Close closes conn.
func New(conn *grpc.ClientConn) *Client {
	return &Client{
		conn:          conn,
		Automations:   platformv1.NewAutomationServiceClient(conn),
		Runs:          platformv1.NewRunServiceClient(conn),
		Exceptions:    platformv1.NewExceptionServiceClient(conn),
		Events:        platformv1.NewEventServiceClient(conn),
		APIKeys:       platformv1.NewApiKeyServiceClient(conn),
		Organizations: platformv1.NewOrganizationServiceClient(conn),
		Workspaces:    platformv1.NewWorkspaceServiceClient(conn),
		Files:         platformv1.NewFileServiceClient(conn),
		History:       platformv1.NewRunHistoryServiceClient(conn),
		GuideEntries:  platformv1.NewGuideEntryServiceClient(conn),
		Tests:         platformv1.NewAutomationTestServiceClient(conn),
	}
}

// Conn is the client's gRPC connection.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// parseAddress returns the gRPC target of an address and whether it asks
// for TLS.
func parseAddress(address string) (target string, useTLS bool, err error) {
	address = strings.TrimSpace(address)
	if address == "" {
		return "", false, errors.New("client: no server address")
	}
	if !strings.Contains(address, "://") {
		return address, false, nil
	}
	u, err := url.Parse(address)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", false, fmt.Errorf("client: address %q: want host:port, http://host:port or https://host[:port]", address)
	}
	switch u.Scheme {
	case "http":
		if u.Port() == "" {
			return net.JoinHostPort(u.Hostname(), "80"), false, nil
		}
		return u.Host, false, nil
	case "https":
		if u.Port() == "" {
			return net.JoinHostPort(u.Hostname(), "443"), true, nil
		}
		return u.Host, true, nil
	}
	return "", false, fmt.Errorf("client: address %q: the scheme must be http or https", address)
}

// bearer sends the API key as Authorization: Bearer.
type bearer struct {
	key    string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.key}, nil
}

// RequireTransportSecurity is false: `prose serve` listens in plain HTTP/2
// on loopback by default, and the key must reach it.
func (b bearer) RequireTransportSecurity() bool { return false }
