package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

func TestParsePlanForms(t *testing.T) {
	want := []session.PlanStep{
		{N: 1, Text: "Add retry with backoff to Client.Do.", Files: []string{"client.go", "client_test.go"}, Verify: "go test ./client"},
		{N: 2, Text: "Document the retry policy.", Files: []string{"README.md"}, Verify: "read it"},
		{N: 3, Text: "Run the whole suite.", Verify: "go test ./..."},
	}
	for name, text := range map[string]string{
		"inline": `Here is the plan:

1. Add retry with backoff to Client.Do. Files: client.go, client_test.go. Verify: go test ./client
2. Document the retry policy. Files: README.md. Verify: read it
3. Run the whole suite. Files: none. Verify: ` + "`go test ./...`" + `

Risks: the backoff may slow tests.
1. This numbered list after the plan is not part of it.`,
		"fields on their own lines": `1. Add retry with backoff to Client.Do.
   Files: client.go and client_test.go
   Verify: go test ./client
2. Document the retry policy.
   - **Files:** README.md
   - **Verify:** read it
3. Run the whole suite.
   Files: none
   Verify: go test ./...
`,
		"markdown and blank lines": `## Plan

**1.** Add retry with backoff to Client.Do.

Files: ` + "`client.go`, `client_test.go`" + `
Verify: go test ./client

2) Document the retry policy.
Files: README.md
Verify: read it

Step 3: Run the whole suite.
Files: -
Verify: go test ./...

Open questions: none.`,
	} {
		t.Run(name, func(t *testing.T) {
			steps, err := parsePlan(text, planAnswerRules)
			require.NoError(t, err)
			assert.Equal(t, want, steps)
		})
	}
}

func TestParsePlanEndsAtASectionAfterTheList(t *testing.T) {
	for _, tail := range []string{"Risks: the API may change.", "**Open questions**", "## Notes", "Open questions: none"} {
		steps, err := parsePlan("1. a. Files: x. Verify: y\n2. b. Files: x. Verify: y\n3. c. Files: x. Verify: go test\n"+tail+"\n1. Is it needed?", planAnswerRules)
		require.NoError(t, err, tail)
		require.Len(t, steps, 3, tail)
		assert.Equal(t, "go test", steps[2].Verify, tail)
	}
	steps, err := parsePlan("1. Update the client\nso that it retries. Files: c.go. Verify: go test", planFileRules)
	require.NoError(t, err)
	assert.Equal(t, "Update the client so that it retries.", steps[0].Text, "a wrapped line continues its step")
}

func TestParsePlanNestedItemsBelongToTheirStep(t *testing.T) {
	steps, err := parsePlan(`1. Split the handler:
   1. move parsing out
   2. keep the old name as a wrapper
   Files: h.go. Verify: go test
2. Add tests. Files: h_test.go. Verify: go test
3. Update docs. Files: doc.go. Verify: go vet`, planAnswerRules)
	require.NoError(t, err)
	require.Len(t, steps, 3)
	assert.Equal(t, "Split the handler: 1. move parsing out 2. keep the old name as a wrapper", steps[0].Text)
	assert.Equal(t, []string{"h.go"}, steps[0].Files)
}

// A numbered plan is a plan: "Files:" and "Verify:" are optional.
func TestParsePlanFieldsAreOptional(t *testing.T) {
	steps, err := parsePlan("1. Change the greeting.\n2. Add a test. Verify: sh t.sh\n3. Update the README. Files: README.md", planAnswerRules)
	require.NoError(t, err)
	assert.Equal(t, []session.PlanStep{
		{N: 1, Text: "Change the greeting."},
		{N: 2, Text: "Add a test.", Verify: "sh t.sh"},
		{N: 3, Text: "Update the README.", Files: []string{"README.md"}},
	}, steps)
}

func TestParsePlanProblemsAreSaidForTheModel(t *testing.T) {
	for text, want := range map[string]string{
		"I would add a retry loop.":                                                       "no numbered steps found",
		"1. a. Files: x. Verify: y\n2. b. Files: x. Verify: y":                            "the plan has 2 steps; it needs 3 to 8 steps",
		"1. a. Files: x. Verify: y\n2. b. Files: x. Verify: y\n4. c. Files: x. Verify: y": "the steps are numbered 1, 2, 4",
		"1. Files: x. Verify: y\n2. b. Files: x. Verify: y\n3. c. Files: x. Verify: y":    "step 1 says nothing to do",
	} {
		_, err := parsePlan(text, planAnswerRules)
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), want, text)
	}
	nine := ""
	for i := 1; i <= 9; i++ {
		nine += string(rune('0'+i)) + ". step. Files: a. Verify: b\n"
	}
	_, err := parsePlan(nine, planAnswerRules)
	assert.ErrorContains(t, err, "9 steps; it needs 3 to 8 steps (merge small steps)")
	steps, err := parsePlan(nine, planFileRules)
	assert.NoError(t, err, "a hand-written plan file may be longer")
	assert.Len(t, steps, 9)
}

func TestParsePlanFileNeedsNoFields(t *testing.T) {
	steps, err := parsePlan("1. Bump the version\n2. Tag it\n", planFileRules)
	require.NoError(t, err)
	assert.Equal(t, []session.PlanStep{{N: 1, Text: "Bump the version"}, {N: 2, Text: "Tag it"}}, steps)
}

func TestFormatStepRoundTrips(t *testing.T) {
	s := session.PlanStep{N: 2, Text: "Add tests.", Files: []string{"a_test.go", "b_test.go"}, Verify: "go test ./..."}
	assert.Equal(t, "2. Add tests. Files: a_test.go, b_test.go. Verify: go test ./...", formatStep(s))
	steps, err := parsePlan("1. x. Files: y. Verify: z\n"+formatStep(s)+"\n3. w. Files: none. Verify: v", planAnswerRules)
	require.NoError(t, err)
	assert.Equal(t, s, steps[1])
}

func TestReadStepResult(t *testing.T) {
	for answer, want := range map[string]stepResult{
		"Added the retry.\nSTEP DONE":                    {marked: true, note: "Added the retry."},
		"Added it.\n\n**STEP DONE**\n":                   {marked: true, note: "Added it."},
		"STEP DONE: tests pass":                          {marked: true, note: "tests pass"},
		"Tried.\nSTEP FAILED: go test fails in x_test":   {failed: true, marked: true, note: "go test fails in x_test"},
		"`STEP FAILED` - the API does not exist":         {failed: true, marked: true, note: "the API does not exist"},
		"STEP FAILED":                                    {failed: true, marked: true, note: "no reason given"},
		"step failed: lowercase still counts\n\nThanks.": {failed: true, marked: true, note: "lowercase still counts"},
		"All done, tests pass.":                          {note: "All done, tests pass."},
	} {
		assert.Equal(t, want, readStepResult(answer), "%q", answer)
	}
}
