package commands

import (
	"context"
	"iter"
	"strings"

	"decode/agent/llm"
	"decode/secrets"
	"decode/tools"
)

// redactor is the process's one redactor, made on first use.
func (f *Factory) redactor() *secrets.Redactor {
	if f.Secrets == nil {
		f.Secrets = secrets.NewRedactor()
	}
	return f.Secrets
}

// learnSecrets tells the redactor the values decode knows are secret: the
// variables that may hold a key (the providers', api_key_env, secret_env)
// and every variable scrubbed from tools' environments.
func (f *Factory) learnSecrets(cfg Config) {
	r := f.redactor()
	for _, n := range f.secretNames(cfg) {
		if v := f.Getenv(n); v != "" {
			r.Add(v)
		}
	}
	env := f.Environ()
	kept := map[string]bool{}
	for _, kv := range tools.ScrubEnv(env, f.secretNames(cfg)) {
		kept[kv] = true
	}
	for _, kv := range env {
		if !kept[kv] {
			_, v, _ := strings.Cut(kv, "=")
			r.Add(v)
		}
	}
	learnMCPSecrets(r, cfg, f.Getenv)
}

// learnMCPSecrets adds the secrets of MCP server configs: secret-looking
// env entries (a server may print its environment), credential headers and
// the bearer token.
func learnMCPSecrets(r *secrets.Redactor, cfg Config, getenv func(string) string) {
	for _, s := range cfg.MCPServers {
		for k, v := range s.Env {
			if len(tools.ScrubEnv([]string{k + "=" + v}, cfg.SecretEnv)) == 0 {
				r.Add(v)
			}
		}
		for k, v := range s.Headers {
			if name := strings.ToLower(k); strings.Contains(name, "auth") || strings.Contains(name, "token") || strings.Contains(name, "key") || strings.Contains(name, "secret") || strings.Contains(name, "cookie") {
				r.Add(v)
				if _, tok, ok := strings.Cut(v, " "); ok {
					r.Add(tok) // "Bearer TOKEN": the token alone too
				}
			}
		}
		if s.BearerTokenEnv != "" {
			if v := getenv(s.BearerTokenEnv); v != "" {
				r.Add(v)
			}
		}
	}
}

// redactingModel masks what goes to the model: known secret values always,
// secret shapes unless the config lets the model see them. The session
// entries the messages come from are redacted already; this covers the
// system prompt (memory files, skills) and is a net under everything else.
type redactingModel struct {
	llm.Model
	r          *secrets.Redactor
	seesShapes bool
}

func (m redactingModel) Stream(ctx context.Context, req llm.Request) iter.Seq[llm.Event] {
	red := m.r.String
	if m.seesShapes {
		red = m.r.ValuesString
	}
	req.System = red(req.System)
	msgs := make([]llm.Message, len(req.Messages))
	for i, msg := range req.Messages {
		msg.Text = red(msg.Text)
		if len(msg.Results) > 0 {
			rs := make([]llm.ToolResult, len(msg.Results))
			for j, res := range msg.Results {
				res.Content = red(res.Content)
				rs[j] = res
			}
			msg.Results = rs
		}
		msgs[i] = msg
	}
	req.Messages = msgs
	return m.Model.Stream(ctx, req)
}
