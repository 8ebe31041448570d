package providers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTakesImages(t *testing.T) {
	for model, want := range map[string]bool{
		"script:testdata/x.json":        false,
		"deepseek:deepseek-chat":        false,
		"openai:gpt-3.5-turbo":          false,
		"openai:gpt-4":                  false,
		"openrouter:openai/o3-mini":     false,
		"openai:gpt-4.1-mini":           true,
		"openai:gpt-4o":                 true,
		"openai:gpt-5":                  true,
		"anthropic:claude-sonnet-4-5":   true,
		"gemini:gemini-2.5-flash":       true,
		"ollama:llava":                  true,
		"openrouter:anthropic/claude-x": true,
	} {
		assert.Equal(t, want, TakesImages(model), model)
	}
}
