package tools

import (
	"path"
	"strings"

	"decode/secrets"
)

// secretVarNames are secrets whose names no pattern below catches.
var secretVarNames = map[string]bool{
	"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "GEMINI_API_KEY": true, "GOOGLE_API_KEY": true,
	"OPENROUTER_API_KEY": true, "GITHUB_TOKEN": true, "GH_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true,
	"AWS_SESSION_TOKEN": true, "AWS_ACCESS_KEY_ID": true, "AZURE_OPENAI_API_KEY": true, "HF_TOKEN": true,
	"HUGGING_FACE_HUB_TOKEN": true, "NPM_TOKEN": true, "DECODE_API_KEY": true, "PGPASSWORD": true,
	"VAULT_TOKEN": true, "DOCKER_AUTH_CONFIG": true,
}

// secretValuePrefixes start the values of well-known API keys, whatever the
// variable holding them is called.
var secretValuePrefixes = []string{"sk-ant-", "sk-proj-", "sk-or-", "ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "AIza"}

// ScrubEnv returns env without API keys and other secrets, for the
// environment of commands the model runs: variables named in extra (exact
// names, or patterns with *), well-known secret variables, names ending in
// _KEY, _TOKEN or _SECRET or containing PASSWORD, PASSWD, SECRET or API_KEY,
// and values with a secret's shape (secrets.HasShape).
func ScrubEnv(env []string, extra []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if secretVar(name, value, extra) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// secretVar reports whether the variable holds a secret.
func secretVar(name, value string, extra []string) bool {
	for _, e := range extra {
		if e == name {
			return true
		}
		if ok, _ := path.Match(e, name); ok && strings.Contains(e, "*") {
			return true
		}
	}
	n := strings.ToUpper(name)
	if secretVarNames[n] {
		return true
	}
	for _, suffix := range []string{"_KEY", "_TOKEN", "_SECRET", "_KEYS", "_TOKENS", "_SECRETS"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	for _, part := range []string{"PASSWORD", "PASSWD", "SECRET", "API_KEY", "APIKEY", "ACCESS_TOKEN", "AUTH_TOKEN", "PRIVATE_KEY"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	for _, p := range secretValuePrefixes {
		if strings.HasPrefix(value, p) && len(value) >= len(p)+16 {
			return true
		}
	}
	// Whatever its name, a value with a secret's shape (a key, a token, a
	// URL with a password, a private key) is a secret.
	return secrets.HasShape(value)
}
