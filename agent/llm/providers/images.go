package providers

import "strings"

// TakesImages reports whether the model ("provider:model") may be sent
// images in a user message. It says no only for models known to refuse
// them: the scripted provider, DeepSeek's API, and OpenAI's text-only
// models; any other model (an Ollama or OpenRouter one decode cannot
// judge) is sent the image, and a model that refuses it answers with the
// provider's error.
func TakesImages(model string) bool {
	provider, name, _ := strings.Cut(model, ":")
	switch provider {
	case Script, "deepseek":
		return false
	case "openai", "openrouter":
		name = strings.TrimPrefix(name, "openai/")
		for _, p := range []string{"gpt-3.5", "o1-mini", "o3-mini", "davinci", "babbage"} {
			if strings.HasPrefix(name, p) {
				return false
			}
		}
		switch name {
		case "gpt-4", "gpt-4-0613", "gpt-4-0314", "gpt-4-32k":
			return false
		}
	}
	return true
}
