package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSkillsDiscoveryAndFrontMatter(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "project", ".decode", "skills")
	user := filepath.Join(root, "config", "decode", "skills")
	skill := func(dir, folder, text string) string {
		p := filepath.Join(dir, folder, "SKILL.md")
		writeFile(t, p, text)
		return p
	}
	alpha := skill(project, "alpha", "---\nname: alpha\ndescription: Release the project.\n---\nRun make release.\n")
	beta := skill(project, "beta", "\uFEFF---\r\n# a comment\r\ndescription: \"Quoted: with a colon\"\r\nlicense: MIT\r\n---\r\nBody.\r\n")
	folded := skill(project, "folded", "---\nname: 'it''s folded'\ndescription: >\n  Spans\n  several   lines.\n---\n")
	bare := skill(project, "bare", "# Just instructions\nNo front matter here.\n")
	skill(project, "unclosed", "---\nname: unclosed\ndescription: never ends\n")
	skill(project, ".hidden", "---\nname: hidden\ndescription: x\n---\n")
	writeFile(t, filepath.Join(project, "notes", "README.md"), "not a skill\n")
	writeFile(t, filepath.Join(project, "loose.md"), "a file, not a folder\n")
	skill(project, "zdup", "---\nname: alpha\ndescription: same name, same dir\n---\n")
	skill(user, "alpha", "---\nname: alpha\ndescription: the user's alpha, overridden\n---\n")
	gamma := skill(user, "gamma", "---\nname: gamma\ndescription: Only in the user dir.\n---\n")

	skills, warnings := Skills(Confinement{}, project, user, filepath.Join(root, "missing"))

	assert.Equal(t, []Skill{
		{Name: "alpha", Description: "Release the project.", Path: alpha},
		{Name: "bare", Description: "", Path: bare},
		{Name: "beta", Description: "Quoted: with a colon", Path: beta},
		{Name: "it's folded", Description: "Spans several lines.", Path: folded},
		{Name: "gamma", Description: "Only in the user dir.", Path: gamma},
	}, skills)
	joined := strings.Join(warnings, "\n")
	assert.Len(t, warnings, 4, joined)
	assert.Contains(t, joined, bare+": no front matter")
	assert.Contains(t, joined, bare+": no description")
	assert.Contains(t, joined, filepath.Join(project, "unclosed", "SKILL.md")+`: front matter has no closing "---", skipped`)
	assert.Contains(t, joined, filepath.Join(project, "zdup", "SKILL.md")+`: name "alpha" already used`)
	assert.NotContains(t, joined, user, "a project skill overrides a user skill quietly")
}

func TestSkillsWarnsOnMalformedLinesButKeepsTheSkill(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "odd", "SKILL.md")
	writeFile(t, p, "---\n  stray indent\nname: odd\nthis line has no colon\ndescription: Still usable.\n---\n")

	skills, warnings := Skills(Confinement{}, dir)

	assert.Equal(t, []Skill{{Name: "odd", Description: "Still usable.", Path: p}}, skills)
	assert.Equal(t, []string{
		"skills: " + p + ": line 2: indented line outside a key",
		"skills: " + p + `: line 4: expected "key: value"`,
	}, warnings)
}

func TestSkillsWarnsOnUnreadableEntries(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "isdir", "SKILL.md"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "loop"), 0o755))
	require.NoError(t, os.Symlink("SKILL.md", filepath.Join(dir, "loop", "SKILL.md")))
	notDir := filepath.Join(dir, "file")
	writeFile(t, notDir, "x")

	skills, warnings := Skills(Confinement{}, dir, notDir)

	assert.Empty(t, skills)
	joined := strings.Join(warnings, "\n")
	assert.Len(t, warnings, 3, joined)
	assert.Contains(t, joined, filepath.Join(dir, "isdir", "SKILL.md")+": not a regular file")
	assert.Contains(t, joined, filepath.Join(dir, "loop", "SKILL.md"))
	assert.Contains(t, joined, notDir+": not a directory")
}

func TestLoadSkill(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rel", "SKILL.md"), "---\nname: rel\ndescription: d\n---\n\n# Release\n\nRun `make release`.\n---\nA rule after the body stays.\n")
	writeFile(t, filepath.Join(dir, "plain", "SKILL.md"), "No front matter.\n")
	skills, _ := Skills(Confinement{}, dir)
	require.Len(t, skills, 2)

	plain, err := LoadSkill(skills[0])
	require.NoError(t, err)
	assert.Equal(t, "No front matter.", plain)

	rel, err := LoadSkill(skills[1])
	require.NoError(t, err)
	assert.Equal(t, "# Release\n\nRun `make release`.\n---\nA rule after the body stays.", rel)

	_, err = LoadSkill(Skill{Name: "gone", Path: filepath.Join(dir, "gone", "SKILL.md")})
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorContains(t, err, "load skill gone")
}

func TestLoadSkillCapsHugeSkills(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big", "SKILL.md")
	writeFile(t, p, "---\nname: big\ndescription: d\n---\n"+strings.Repeat("0123456789abcdef\n", 10000))

	body, err := LoadSkill(Skill{Name: "big", Path: p})

	require.NoError(t, err)
	assert.Less(t, len(body), maxSkillBytes+200)
	assert.Contains(t, body, "[decode: cut at ")
}
