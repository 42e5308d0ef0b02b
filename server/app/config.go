package app

import (
	"crypto/tls"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/proserun/prose/internal/engine"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/server"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Config is the configuration of `prose serve`: what its flags set
// (cmd/prose), and what tests set beside them (Clock, Outer, Store, …).
type Config struct {
	// Addr is the address of gRPC and HTTP (--addr); Data and Database
	// the store (--data, --database); LogLevel and LogFormat the logs.
	Addr string
	// GRPCAddr, when set, is a gRPC-only port served by grpc-go's own
	// transport (chain.Options.GRPCOnly), beside Addr.
	GRPCAddr string
	// GRPCHandshakeTimeout replaces the gRPC-only port's handshake timeout
	// (chain.GRPCOnlyHandshakeTimeout) when positive; no flag: tests
	// shorten it.
	GRPCHandshakeTimeout time.Duration
	Data                 string
	Database             string
	LogLevel             string
	LogFormat            string
	// PublicURL is the public origin for signed file URLs ("": the request's).
	PublicURL string
	// PrintLoginLink asks `prose serve` (cmd/prose, not New) to print a
	// one-time console sign-in link at start (--print-login-link).
	PrintLoginLink bool
	// Lease is the engine's run lease (0: engine default); Books is a JSON
	// file of workspace books registered at start.
	Lease time.Duration
	// Workers bounds the runs this replica executes at once (0: engine
	// default).
	Workers int
	Books   string
	// Pprof, when set, is an address serving net/http/pprof (profiling).
	Pprof string
	// MaxUploads bounds the file uploads in flight (0: gateway default);
	// BodyReadTimeout the time to read a request body (0: gateway default).
	MaxUploads int
	// MaxUploadsPerOrg bounds one organization's share of them (0: half
	// of MaxUploads; -1: no share).
	MaxUploadsPerOrg int
	UploadWait       time.Duration
	// MaxGRPCUploads bounds the native gRPC uploads in flight (0: the
	// server's default).
	MaxGRPCUploads int
	// ReplicaName names this replica among those of one database, stable
	// across its restarts (MessageTriggers.SetReplicaName; "": the host
	// name).
	ReplicaName string
	// MaxGRPCUploadsPerOrg bounds one organization's share of them (0:
	// half of MaxGRPCUploads; -1: no share).
	MaxGRPCUploadsPerOrg int
	BodyReadTimeout      time.Duration
	// Limits bound each run (lang.Limits); TimeSlice is the engine's
	// (engine.Options.TimeSlice); MaxLostLeases is the store's
	// (store.Options.MaxLostLeases). Zero: the defaults.
	Limits        lang.Limits
	TimeSlice     time.Duration
	MaxLostLeases int
	// OrgWorkers is engine.Options.OrgWorkers (zero: the default).
	OrgWorkers int
	// Processors is engine.Options.Processors (zero: the default).
	Processors int
	// InlineWindow is engine.Options.InlineWindow (zero: the default).
	InlineWindow time.Duration
	// MaxGuidedPerRun is engine.Options.MaxGuidedPerRun (zero: the default).
	MaxGuidedPerRun int
	// History bounds what the engine records of each run's history
	// (engine.Options.History; zero fields: the defaults).
	History engine.HistoryLimits
	// MaxEventMessage caps a user message's bytes (0: the server's
	// default); EventPoll is an idle event stream's safety re-read (0: the
	// default; negative: never).
	MaxEventMessage int
	EventPoll       time.Duration
	// Sizes are the sizes the server accepts (zero fields: the defaults).
	Sizes store.Sizes
	// SessionTTL is how long a web console session lasts (0: the console's
	// default).
	SessionTTL time.Duration
	// ScheduleCatchUp: see schedule.Options.CatchUp (0: the default).
	ScheduleCatchUp time.Duration
	// Clock is the scheduler's and the schedule service's (nil: time.Now;
	// tests pass a fake one).
	Clock func() time.Time
	// SessionClock is the console's and the authenticator's clock: console
	// sessions start and expire on it, API keys expire on it (nil:
	// time.Now; tests move one by hand instead of sleeping past an end).
	SessionClock func() time.Time
	// TriggerRate bounds each trigger instance's events per replica
	// (server.TriggerRate).
	TriggerRate server.TriggerRate
	// AllowPrivateNetworks lets the books, file downloads and outbound
	// webhooks reach addresses that are not public (netguard): loopback,
	// private networks, cloud metadata. Off by default.
	AllowPrivateNetworks bool
	// WebhookBackoff is the first retry's wait of a failed webhook delivery
	// (0: outbound.DefaultBaseBackoff).
	WebhookBackoff time.Duration
	// SecretKeysFile holds the keys that seal connection credentials
	// (base64, separated by commas or new lines; the first seals). Empty:
	// PROSE_SECRET_KEYS, else the key the store made at its first start.
	SecretKeysFile string
	// Model configures the model-backed agent (URL "": none).
	Model ModelConfig
	// TLSCert and TLSKey serve TLS on Addr (both or neither); read again
	// when the files change.
	TLSCert, TLSKey string
	// TLSClientCA, when set, asks every client for a certificate signed by
	// one of the file's CAs (mutual TLS; needs TLSCert).
	TLSClientCA string
	// TLSConfig is the TLS of both ports, made by serveCmd from the flags
	// above (nil: plain).
	TLSConfig *tls.Config
	// TracerProvider, when set, traces requests (otelgrpc, otelhttp) and
	// runs (the engine's spans); nil: tracing off. serveCmd sets it from
	// the OTEL_ variables (tracing.Setup); tests pass an in-memory one.
	TracerProvider trace.TracerProvider
	// MetricsAutomations: see metrics.Options.MaxAutomations.
	MetricsAutomations int
	// ShutdownTimeout bounds the drain of a shutdown (SIGTERM): requests in
	// flight, and runs in flight reaching their next statement to be
	// handed back.
	ShutdownTimeout time.Duration

	// Outer are interceptor entries before the chain (tests use them to
	// observe calls, over both transports).
	Outer []transport.Middleware
	// Store, when set, is used instead of opening --data / --database (tests
	// share one PostgreSQL database this way); the caller closes it.
	Store store.Store
}
