package commands

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm/conformance"
)

// TestIdleTimeoutRetriesAStalledStream: a provider that sends nothing (no
// headers), or half an answer and then nothing, fails that attempt after
// --idle-timeout as a retryable provider error; the retry gets the answer.
// Without the idle timeout such a run hung until --timeout.
func TestIdleTimeoutRetriesAStalledStream(t *testing.T) {
	for _, c := range []struct{ adapter, model, path, keyEnv, baseEnv, base string }{
		{"openai", "openai:gpt-4.1-mini", "/v1/chat/completions", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"},
		{"anthropic", "anthropic:claude-sonnet-4-5", "/v1/messages", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ""},
		{"gemini", "gemini:gemini-2.5-flash", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", ""},
	} {
		t.Run(c.adapter, func(t *testing.T) {
			srv := conformance.NewServer(t, filepath.Join("..", "agent", "llm", c.adapter, "testdata"), c.path)
			srv.Queue(conformance.Reply{Stall: "headers"}, conformance.Reply{File: "text.sse", Stall: "half"}, conformance.Reply{File: "text.sse"})
			f, stdout, stderr := providerTestFactory(t, map[string]string{c.keyEnv: "k", c.baseEnv: srv.URL + c.base})
			began := time.Now()
			code := Main([]string{"decode", "ask", "--no-session", "--idle-timeout", "300ms", "-m", c.model, "say hello"}, f)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			assert.Len(t, srv.Requests(), 3, "the stalled attempts and the one answered")
			assert.Regexp(t, `no data from the provider for 300ms.*retrying \(attempt 2\)`, stderr.String())
			// genai reports a body that failed mid-read as a cut stream.
			assert.Regexp(t, `(no data from the provider for 300ms|stream cut).*retrying \(attempt 3\)`, stderr.String())
			assert.Contains(t, stdout.String(), "Hello")
			assert.Less(t, time.Since(began), 20*time.Second)
		})
	}
	t.Run("bad value", func(t *testing.T) {
		f, _, stderr := providerTestFactory(t, map[string]string{"OPENAI_API_KEY": "k"})
		code := Main([]string{"decode", "ask", "--no-session", "--idle-timeout", "soon", "-m", "openai:gpt-4.1-mini", "hi"}, f)
		assert.Equal(t, ExitUsage, code)
		assert.Contains(t, stderr.String(), `idle timeout "soon" is not a duration`)
	})
}
