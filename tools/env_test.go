package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScrubEnv(t *testing.T) {
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "GOFLAGS=-mod=mod", "TERM=xterm",
		"OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=x", "GEMINI_API_KEY=x", "GOOGLE_API_KEY=x", "OPENROUTER_API_KEY=x",
		"GITHUB_TOKEN=x", "AWS_SECRET_ACCESS_KEY=x", "FAKE_API_KEY=x", "MY_SERVICE_TOKEN=x", "DB_PASSWORD=x",
		"CLIENT_SECRET=x", "pgpassword=x", "Some_Api_Key=x", "MYCO_DEPLOY=x", "CUSTOM=x",
		"INNOCENT=sk-ant-api03-0123456789abcdef0123", "ALSO_INNOCENT=ghp_0123456789abcdefghij0123",
		"SHORT=sk-ant-x", "MALFORMED",
	}
	got := ScrubEnv(env, []string{"CUSTOM", "MYCO_*"})
	assert.Equal(t, []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "GOFLAGS=-mod=mod", "TERM=xterm", "SHORT=sk-ant-x", "MALFORMED"}, got)
	assert.Equal(t, []string{}, ScrubEnv(nil, nil), "an empty environment stays empty, not nil")
}
