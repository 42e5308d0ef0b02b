package app

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/proserun/prose/internal/agent"
)

// ModelConfig configures the model-backed agent of `prose serve` (its
// --agent-* flags).
type ModelConfig struct {
	URL, Model, ID, KeyEnv string
	RequestTimeout         time.Duration
	MaxToolRounds          int
	MaxStreamBytes         int
	NoStream               bool
	// HTTPClient is the agent's client (tests; nil: a new one).
	HTTPClient *http.Client
}

// DefaultAgentKeyEnv is the environment variable the key is read from.
const DefaultAgentKeyEnv = "PROSE_AGENT_API_KEY"

// Agents returns the agents of the server: the built-in one (the default),
// and the model-backed one when URL is set.
func (f *ModelConfig) Agents() ([]agent.Agent, error) {
	if f.URL == "" {
		if f.Model != "" {
			return nil, fmt.Errorf("--agent-model needs --agent-url")
		}
		return nil, nil
	}
	if f.ID == agent.ProseID || f.ID == "" {
		return nil, fmt.Errorf("--agent-id %q is taken by the built-in agent", f.ID)
	}
	keyEnv := f.KeyEnv
	if keyEnv == "" {
		keyEnv = DefaultAgentKeyEnv
	}
	m, err := agent.NewModel(agent.ModelOptions{
		ID: f.ID, URL: f.URL, Model: f.Model, APIKey: os.Getenv(keyEnv),
		RequestTimeout: f.RequestTimeout, MaxToolRounds: f.MaxToolRounds, MaxStreamBytes: f.MaxStreamBytes,
		NoStream: f.NoStream, HTTPClient: f.HTTPClient,
	})
	if err != nil {
		return nil, fmt.Errorf("--agent-url: %w", err)
	}
	return []agent.Agent{agent.Prose{}, m}, nil
}
