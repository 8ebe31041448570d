package memory

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"decode/secrets"
)

const (
	// skillFile names the file that makes a folder a skill.
	skillFile = "SKILL.md"
	// maxFrontMatterLines bounds the scan for the closing "---", so a file
	// that opens front matter and never closes it is not read to the end.
	maxFrontMatterLines = 100
	// maxSkillBytes caps what LoadSkill hands the model.
	maxSkillBytes = 64 * 1024
)

// Skill is a folder holding a SKILL.md: instructions the model loads by name
// when a task calls for them.
type Skill struct {
	Name        string
	Description string
	// Path is the SKILL.md file.
	Path string
	// Untrusted marks a skill that came with a repository the user has not
	// trusted (decode trust): its text is offered to the model as data from
	// the repository, not as the user's instructions.
	Untrusted bool
	// root and also confine the reads of Path (see secrets.Confine).
	root string
	also []string
}

// Confinement is where the skill files of a repository may lead: Root is
// the repository (or working directory), Also the user's own config
// directories.
type Confinement struct {
	Root string
	Also []string
}

// Skills lists the skills in dirs: every folder directly under a dir that
// holds a SKILL.md. Name and description come from the file's front matter
// (--- / name: x / description: y / ---), parsed by hand; a missing name is
// the folder's name. Earlier dirs take precedence: a later skill with a name
// already listed is left out (quietly when it is in another dir, since that is
// how a project overrides a user skill; with a warning within one dir). Missing
// dirs are fine; malformed files give warnings.
//
// Every SKILL.md, and every skill folder, must resolve inside c (see
// secrets.Confine); one that leads elsewhere is skipped with a warning.
func Skills(c Confinement, dirs ...string) ([]Skill, []string) {
	var skills []Skill
	var warnings []string
	byName := map[string]string{} // name → dir it came from
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			// A missing dir is normal; one that is a file is a mistake.
			if !errors.Is(err, os.ErrNotExist) {
				warnings = append(warnings, fmt.Sprintf("skills: %s: %v", dir, unwrapPath(err)))
			}
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			s, warns, ok := readSkill(c, dir, e.Name())
			warnings = append(warnings, warns...)
			if !ok {
				continue
			}
			if from, dup := byName[s.Name]; dup {
				if from == dir {
					warnings = append(warnings, fmt.Sprintf("skills: %s: name %q already used in %s, skipped", s.Path, s.Name, dir))
				}
				continue
			}
			byName[s.Name] = dir
			skills = append(skills, s)
		}
	}
	return skills, warnings
}

// readSkill reads dir/name/SKILL.md's front matter. ok is false when the
// entry is not a skill or cannot be used.
func readSkill(c Confinement, dir, name string) (s Skill, warnings []string, ok bool) {
	path := filepath.Join(dir, name, skillFile)
	if err := secrets.Confine(path, c.Root, c.Also...); secrets.IsOutside(err) {
		return Skill{}, []string{fmt.Sprintf("skills: %v", err)}, false
	}
	info, err := os.Stat(path)
	if err != nil {
		if !isMissing(err) {
			warnings = append(warnings, fmt.Sprintf("skills: %s: %v, skipped", path, unwrapPath(err)))
		}
		return Skill{}, warnings, false
	}
	if !info.Mode().IsRegular() {
		return Skill{}, []string{fmt.Sprintf("skills: %s: not a regular file, skipped", path)}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return Skill{}, []string{fmt.Sprintf("skills: %s: %v, skipped", path, unwrapPath(err))}, false
	}
	defer f.Close()
	fm, problems, err := parseFrontMatter(f)
	if err != nil {
		return Skill{}, []string{fmt.Sprintf("skills: %s: %v, skipped", path, err)}, false
	}
	for _, p := range problems {
		warnings = append(warnings, fmt.Sprintf("skills: %s: %s", path, p))
	}
	s = Skill{Name: fm["name"], Description: fm["description"], Path: path, root: c.Root, also: c.Also}
	if s.Name == "" {
		s.Name = name
	}
	if s.Description == "" {
		warnings = append(warnings, fmt.Sprintf("skills: %s: no description; the model cannot tell when to use it", path))
	}
	return s, warnings, true
}

// errUnclosed reports front matter without its closing "---".
var errUnclosed = errors.New(`front matter has no closing "---"`)

// parseFrontMatter reads "key: value" lines between a first line "---" and
// the next "---". Values may be quoted, continue on indented lines, or be a
// block scalar (">" or "|" followed by indented lines); whitespace in values
// is collapsed to single spaces. problems are things worth a warning that do
// not make the file unusable; err means the front matter is unusable.
func parseFrontMatter(r io.Reader) (fields map[string]string, problems []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxSkillBytes)
	fields = map[string]string{}
	if !sc.Scan() || strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\uFEFF")) != "---" {
		if err := sc.Err(); err != nil {
			return nil, nil, err
		}
		return fields, []string{`no front matter ("---" / name: … / description: … / "---")`}, nil
	}
	key := ""
	for n := 2; n <= maxFrontMatterLines+1 && sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "---":
			for k, v := range fields {
				fields[k] = strings.Join(strings.Fields(v), " ")
			}
			return fields, problems, nil
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case line[0] == ' ' || line[0] == '\t':
			if key == "" {
				problems = append(problems, fmt.Sprintf("line %d: indented line outside a key", n))
				continue
			}
			fields[key] += " " + trimmed
			continue
		}
		k, v, found := strings.Cut(line, ":")
		if !found {
			problems = append(problems, fmt.Sprintf("line %d: expected \"key: value\"", n))
			key = ""
			continue
		}
		key = strings.TrimSpace(k)
		fields[key] = unquote(strings.TrimSpace(v))
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return nil, nil, errUnclosed
}

// unquote strips YAML-style quotes and block-scalar indicators from a value.
func unquote(v string) string {
	switch {
	case v == ">" || v == "|" || v == ">-" || v == "|-" || v == ">+" || v == "|+":
		return ""
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return v[1 : len(v)-1]
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}

// LoadSkill returns a skill's instructions: its SKILL.md without the front
// matter, capped at 64 KiB with a note when cut. Paths in it are relative to
// the skill's folder, filepath.Dir(s.Path).
func LoadSkill(s Skill) (string, error) {
	f, err := secrets.Open(s.Path, s.root, s.also...)
	if err != nil {
		return "", fmt.Errorf("load skill %s: %w", s.Name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4*maxSkillBytes))
	if err != nil {
		return "", fmt.Errorf("load skill %s: %w", s.Name, err)
	}
	body := stripFrontMatter(strings.TrimPrefix(string(data), "\uFEFF"))
	body = strings.TrimSpace(body)
	lines := strings.Count(body, "\n") + 1
	content, _ := capText([]byte(body), len(body), lines, 0, maxSkillBytes)
	return strings.TrimSpace(content), nil
}

// stripFrontMatter drops a leading "---" … "---" block; text without a
// closed one is returned whole.
func stripFrontMatter(text string) string {
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimSpace(first) != "---" {
		return text
	}
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if strings.TrimSpace(line) == "---" {
			return rest
		}
	}
	return text
}
