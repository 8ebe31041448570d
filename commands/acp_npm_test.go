package commands

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

// acpNPMDir is where .ci/run installs the official ACP TypeScript SDK.
const acpNPMDir = "../.ci/cache/acp-npm/node_modules"

// TestACPTypeScriptSDK drives the built decode with a client on the
// official SDK (@agentclientprotocol/sdk from npm): initialize, new, a
// prompt whose edit is allowed "always", a prompt cancelled at its
// permission request, then list and load of the session in a second
// process (testdata/acp/client.mjs).
func TestACPTypeScriptSDK(t *testing.T) {
	sdk, _ := filepath.Abs(acpNPMDir)
	_, err := os.Stat(filepath.Join(sdk, "@agentclientprotocol", "sdk", "package.json"))
	node, nerr := exec.LookPath("node")
	if err != nil || nerr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("@agentclientprotocol/sdk or node is missing (%v, %v): .ci/run installs them into .ci/cache/acp-npm", err, nerr)
		}
		t.Skip("@agentclientprotocol/sdk is not installed in .ci/cache/acp-npm (bash .ci/run installs it)")
	}
	tmp := t.TempDir()
	bin := decodeBinary(t)

	script := `{"responses": [
  {"text": "Looking.", "calls": [{"name": "todo", "args": {"todos": [{"content": "fix the typo", "status": "in_progress"}]}}, {"name": "read", "args": {"path": "greeting.txt"}}]},
  {"calls": [{"name": "edit", "args": {"path": "greeting.txt", "old_string": "Hello, wrold", "new_string": "Hello, world"}}]},
  {"text": "Fixed the typo."},
  {"text": "Writing.", "calls": [{"name": "bash", "args": {"command": "echo hi > out.txt"}}]},
  {"text": "Wrote it."}
]}`
	dir, env := acpRepo(t, script)
	client := filepath.Join(tmp, "client")
	require.NoError(t, os.MkdirAll(client, 0o755))
	src, err := os.ReadFile("testdata/acp/client.mjs")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(client, "client.mjs"), src, 0o644))
	require.NoError(t, os.Symlink(sdk, filepath.Join(client, "node_modules")))

	cmd := exec.Command(node, "client.mjs", bin, dir, filepath.Join(dir, "script.json"))
	cmd.Dir = client
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "the SDK client failed; stderr:\n%s", stderr.String())

	var seen struct {
		Init struct {
			ProtocolVersion   int `json:"protocolVersion"`
			AgentCapabilities struct {
				LoadSession         bool           `json:"loadSession"`
				SessionCapabilities map[string]any `json:"sessionCapabilities"`
			} `json:"agentCapabilities"`
		} `json:"init"`
		Session struct {
			SessionID string `json:"sessionId"`
			Modes     struct {
				CurrentModeID string `json:"currentModeId"`
			} `json:"modes"`
		} `json:"session"`
		Prompt1, Prompt2 struct {
			StopReason string `json:"stopReason"`
		}
		Permissions []struct {
			Phase, Title, Kind string
			Options            []string
		} `json:"permissions"`
		Updates map[string][]map[string]any `json:"updates"`
		List    struct {
			Sessions []struct {
				SessionID string `json:"sessionId"`
			} `json:"sessions"`
		} `json:"list"`
		Exit1, Exit2 int
	}
	require.NoError(t, json.Unmarshal(stdout, &seen), "client output: %s", stdout)

	assert.Equal(t, 1, seen.Init.ProtocolVersion)
	assert.True(t, seen.Init.AgentCapabilities.LoadSession)
	assert.Contains(t, seen.Init.AgentCapabilities.SessionCapabilities, "list")
	assert.Equal(t, "default", seen.Session.Modes.CurrentModeID)
	id := seen.Session.SessionID

	// Prompt 1: the edit asked, was allowed always, and came back as a diff.
	assert.Equal(t, "end_turn", seen.Prompt1.StopReason, "stderr:\n%s", stderr.String())
	require.Len(t, seen.Permissions, 2, "one permission request per prompt")
	assert.Equal(t, "prompt1", seen.Permissions[0].Phase)
	assert.Equal(t, "edit", seen.Permissions[0].Kind)
	assert.Equal(t, []string{"allow_once", "allow_always", "reject_once"}, seen.Permissions[0].Options)
	p1 := seen.Updates["prompt1"]
	assert.Equal(t, "Looking.Fixed the typo.", agentText(p1))
	assert.Contains(t, kinds(p1), "plan")
	assert.Contains(t, string(mustJSON(t, p1)), `"newText":"Hello, world!\n","oldText":"Hello, wrold!\n"`)
	data, _ := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	assert.Equal(t, "Hello, world!\n", string(data))

	// Prompt 2: cancelled at its permission request; nothing ran.
	assert.Equal(t, "prompt2", seen.Permissions[1].Phase)
	assert.Equal(t, "execute", seen.Permissions[1].Kind)
	assert.Equal(t, "cancelled", seen.Prompt2.StopReason)
	assert.NoFileExists(t, filepath.Join(dir, "out.txt"))
	assert.Equal(t, 0, seen.Exit1, "decode acp exits 0 when stdin closes")

	// A second process lists and loads the session, history included.
	var listed []string
	for _, s := range seen.List.Sessions {
		listed = append(listed, s.SessionID)
	}
	assert.Contains(t, listed, id)
	load := seen.Updates["load"]
	var users []string
	for _, u := range load {
		if u["sessionUpdate"] == "user_message_chunk" {
			users = append(users, u["content"].(map[string]any)["text"].(string))
		}
	}
	assert.Equal(t, []string{"fix the typo in greeting.txt", "now write out.txt"}, users)
	assert.Contains(t, kinds(load), "tool_call_update:completed")
	assert.Contains(t, kinds(load), "plan")
	assert.Equal(t, 0, seen.Exit2)

	// The session is decode's: "always" is recorded as a change of its run
	// spec, and the cancelled turn as interrupted.
	st, err := session.OpenStore(dir, session.Env{Getenv: func(k string) string { return env[k] }, Home: env["HOME"]})
	require.NoError(t, err)
	s, err := st.Open(context.Background(), id)
	require.NoError(t, err)
	var types []string
	var allow []string
	for _, e := range s.Entries() {
		types = append(types, e.Type)
		if e.Type == session.TypeSpec {
			var d session.SpecData
			require.NoError(t, e.Decode(&d))
			allow = d.Spec.Allow
		}
	}
	assert.Equal(t, []string{"edit(greeting.txt)"}, allow, "allow always is recorded as a rule")
	assert.Contains(t, types, session.TypeInterrupted)
}

func agentText(us []map[string]any) string {
	var b strings.Builder
	for _, u := range us {
		if u["sessionUpdate"] == "agent_message_chunk" {
			b.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

func mustJSON(t *testing.T, v any) []byte {
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}
