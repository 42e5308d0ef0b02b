package main

import (
	"github.com/proserun/prose/internal/agent"
	"github.com/proserun/prose/server/app"
	"github.com/spf13/pflag"
)

// registerModelFlags adds the flags of the model-backed agent of `prose
// serve` to fs, into m.
func registerModelFlags(fs *pflag.FlagSet, m *app.ModelConfig) {
	fs.StringVar(&m.URL, "agent-url", "", "base URL of an OpenAI-compatible chat-completions endpoint, up to /v1 (e.g. https://api.openai.com/v1): adds a model-backed agent beside the built-in one")
	fs.StringVar(&m.Model, "agent-model", "", "the model the model-backed agent asks (required with --agent-url)")
	fs.StringVar(&m.ID, "agent-id", agent.DefaultModelID, "the model-backed agent's id: its threads are …/runs/{r}/agents/{id}/events")
	fs.StringVar(&m.KeyEnv, "agent-key-env", app.DefaultAgentKeyEnv, "the environment variable holding the endpoint's API key (sent as a bearer token; never logged)")
	fs.DurationVar(&m.RequestTimeout, "agent-request-timeout", agent.DefaultModelRequestTimeout, "how long one request to the model endpoint may take, its streamed answer included")
	fs.IntVar(&m.MaxToolRounds, "agent-max-tool-rounds", agent.DefaultModelToolRounds, "rounds of tool calls the model may make in one turn")
	fs.IntVar(&m.MaxStreamBytes, "agent-max-stream-bytes", agent.DefaultModelStreamBytes, "bytes the model may stream in one turn (text and tool arguments)")
	fs.BoolVar(&m.NoStream, "agent-no-stream", false, "ask the endpoint for whole answers instead of streamed ones")
}
