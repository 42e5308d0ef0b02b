package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/proserun/prose/agent"
)

// modelFlags configure the model-backed agent of `prose serve`.
type modelFlags struct {
	url, model, id, keyEnv string
	requestTimeout         time.Duration
	maxToolRounds          int
	maxStreamBytes         int
	noStream               bool
	// httpClient is the agent's client (tests; nil: a new one).
	httpClient *http.Client
}

// DefaultAgentKeyEnv is the environment variable the key is read from.
const DefaultAgentKeyEnv = "PROSE_AGENT_API_KEY"

func (f *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "agent-url", "", "base URL of an OpenAI-compatible chat-completions endpoint, up to /v1 (e.g. https://api.openai.com/v1): adds a model-backed agent beside the built-in one")
	fs.StringVar(&f.model, "agent-model", "", "the model the model-backed agent asks (required with --agent-url)")
	fs.StringVar(&f.id, "agent-id", agent.DefaultModelID, "the model-backed agent's id: its threads are …/runs/{r}/agents/{id}/events")
	fs.StringVar(&f.keyEnv, "agent-key-env", DefaultAgentKeyEnv, "the environment variable holding the endpoint's API key (sent as a bearer token; never logged)")
	fs.DurationVar(&f.requestTimeout, "agent-request-timeout", agent.DefaultModelRequestTimeout, "how long one request to the model endpoint may take, its streamed answer included")
	fs.IntVar(&f.maxToolRounds, "agent-max-tool-rounds", agent.DefaultModelToolRounds, "rounds of tool calls the model may make in one turn")
	fs.IntVar(&f.maxStreamBytes, "agent-max-stream-bytes", agent.DefaultModelStreamBytes, "bytes the model may stream in one turn (text and tool arguments)")
	fs.BoolVar(&f.noStream, "agent-no-stream", false, "ask the endpoint for whole answers instead of streamed ones")
}

// agents returns the agents of the server: the built-in one (the default),
// and the model-backed one when --agent-url is set.
func (f *modelFlags) agents() ([]agent.Agent, error) {
	if f.url == "" {
		if f.model != "" {
			return nil, fmt.Errorf("--agent-model needs --agent-url")
		}
		return nil, nil
	}
	if f.id == agent.ProseID || f.id == "" {
		return nil, fmt.Errorf("--agent-id %q is taken by the built-in agent", f.id)
	}
	keyEnv := f.keyEnv
	if keyEnv == "" {
		keyEnv = DefaultAgentKeyEnv
	}
	m, err := agent.NewModel(agent.ModelOptions{
		ID: f.id, URL: f.url, Model: f.model, APIKey: os.Getenv(keyEnv),
		RequestTimeout: f.requestTimeout, MaxToolRounds: f.maxToolRounds, MaxStreamBytes: f.maxStreamBytes,
		NoStream: f.noStream, HTTPClient: f.httpClient,
	})
	if err != nil {
		return nil, fmt.Errorf("--agent-url: %w", err)
	}
	return []agent.Agent{agent.Prose{}, m}, nil
}
