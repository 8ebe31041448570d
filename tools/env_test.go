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

func TestScrubEnvBySecretShape(t *testing.T) {
	env := []string{
		"DATABASE_URL=postgres://app:s3cretPw0rd@db/prod", "CI_JOB_JWT=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.sig",
		"DEPLOY=AKIAABCDEFGHIJKLMNOP", "PATH=/usr/bin:/bin", "LANG=en_US.UTF-8", "REPO_URL=https://github.com/o/r.git",
	}
	assert.Equal(t, []string{"PATH=/usr/bin:/bin", "LANG=en_US.UTF-8", "REPO_URL=https://github.com/o/r.git"}, ScrubEnv(env, nil),
		"values with a secret's shape go, whatever the variable's name")
}
