package secrets

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMACCoversEveryField(t *testing.T) {
	key := make([]byte, keySize)
	c := Claim{Session: "s1", CallID: "call_1", Tool: "bash", Args: json.RawMessage(`{"command":"ls","a":1}`), Decision: "allow"}
	mac := MAC(key, c)
	assert.True(t, VerifyMAC(key, c, mac))
	same := c
	same.Args = json.RawMessage(`{ "a": 1, "command": "ls" }`)
	assert.True(t, VerifyMAC(key, same, mac), "canonical arguments: key order and spaces do not matter")
	for name, change := range map[string]func(*Claim){
		"session":  func(c *Claim) { c.Session = "s2" },
		"call":     func(c *Claim) { c.CallID = "call_2" },
		"tool":     func(c *Claim) { c.Tool = "write" },
		"args":     func(c *Claim) { c.Args = json.RawMessage(`{"command":"rm -rf ~"}`) },
		"decision": func(c *Claim) { c.Decision = "deny" },
		"text":     func(c *Claim) { c.Text = "an answer" },
	} {
		other := c
		change(&other)
		assert.False(t, VerifyMAC(key, other, mac), "a changed %s fails", name)
	}
	assert.False(t, VerifyMAC([]byte("another key of thirty-two bytes!"), c, mac), "another user's key fails")
	assert.False(t, VerifyMAC(key, c, "hmac-sha256:zz"), "garbage fails")
	assert.False(t, VerifyMAC(key, c, ""), "no MAC fails")
	// Fields cannot run into each other: ("a", "bc") is not ("ab", "c").
	x, y := c, c
	x.Session, x.CallID = "a", "bc"
	y.Session, y.CallID = "ab", "c"
	assert.NotEqual(t, MAC(key, x), MAC(key, y))
}

func TestApprovalKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "decode", "keys", "approval.key")
	k1, err := ApprovalKey(path)
	require.NoError(t, err)
	assert.Len(t, k1, keySize)
	k2, err := ApprovalKey(path)
	require.NoError(t, err)
	assert.Equal(t, k1, k2, "the same key on every use")
	fi, _ := os.Stat(path)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = ApprovalKey(path)
	assert.ErrorContains(t, err, "readable by others")
}
