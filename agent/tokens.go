package agent

import (
	"decode/agent/llm"
	"decode/prompts"
)

// perMessage is what a message's framing (role, ids, separators) costs
// beyond its text, in tokens: a few on every provider.
const perMessage = 4

// perImage is what an image costs, in tokens: Anthropic's figure for a
// picture of about 1.15 megapixels, past which it scales images down
// (OpenAI and Gemini charge less for the same image).
const perImage = 1600

// messageTokens estimates the tokens of one message.
func messageTokens(m llm.Message) int {
	n := perMessage + prompts.EstimateTokens(m.Text) + perImage*len(m.Images)
	for _, c := range m.Calls {
		n += perMessage + prompts.EstimateTokens(c.ID) + prompts.EstimateTokens(c.Name) + prompts.EstimateTokens(string(c.Args))
	}
	for _, r := range m.Results {
		n += perMessage + prompts.EstimateTokens(r.CallID) + prompts.EstimateTokens(r.Content)
	}
	return n
}

// messagesTokens estimates the tokens of messages.
func messagesTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageTokens(m)
	}
	return n
}

// fixedTokens estimates what every request costs besides its messages:
// the system prompt and the tool specs.
func fixedTokens(system string, specs []llm.ToolSpec) int {
	n := prompts.EstimateTokens(system)
	for _, t := range specs {
		n += perMessage + prompts.EstimateTokens(t.Name) + prompts.EstimateTokens(t.Description) + prompts.EstimateTokens(string(t.Schema))
	}
	return n
}

// estimator estimates the size of the next request. It starts from the
// last usage the provider reported (the prompt it counted plus the answer,
// which the next request sends back) and adds an estimate of the messages
// that came after; with no usage to start from, it estimates everything.
type estimator struct {
	// base is the provider's count of the context up to and including its
	// last answer, and baseLen the number of messages that count covers;
	// base is 0 when no usage applies (a new run, a rebuilt context).
	base, baseLen int
}

// observe records the usage of a response that was just appended as the
// n-th message.
func (e *estimator) observe(u llm.Usage, n int) {
	if u.Input <= 0 {
		e.base, e.baseLen = 0, 0
		return
	}
	e.base, e.baseLen = u.Input+u.Output, n
}

// reset forgets the usage: the context was rebuilt.
func (e *estimator) reset() { e.base, e.baseLen = 0, 0 }

// estimate is the size of a request of msgs with fixed() tokens besides.
func (e *estimator) estimate(fixed func() int, msgs []llm.Message) int {
	if e.base > 0 && e.baseLen <= len(msgs) {
		return e.base + messagesTokens(msgs[e.baseLen:])
	}
	return fixed() + messagesTokens(msgs)
}
