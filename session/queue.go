package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Queue is one session's message queue (decode steer): a directory beside
// the store, not in it, so that queuing never contends with the session's
// writer for its ref. Each message is a file written whole (temporary
// file, then rename) and removed once taken, named
// <unix nanoseconds>-<random>.msg for steering and .follow for follow-ups,
// so that names sort in the order messages were queued.
type Queue struct {
	dir string
	// Warn, when set, reports a message that could not be read or removed.
	Warn func(string)
}

// Queued message files' extensions.
const (
	steerExt  = ".msg"
	followExt = ".follow"
)

// Queue returns the message queue of session id.
func (s *Store) Queue(id string) *Queue {
	return &Queue{dir: filepath.Join(s.gitDir, "decode", "queue", id)}
}

// Put queues a message; followUp messages wait until the turn would end.
func (q *Queue) Put(msg string, followUp bool, now time.Time) error {
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	name := fmt.Sprintf("%020d-%s%s", now.UnixNano(), hex.EncodeToString(rnd[:]), ext(followUp))
	tmp, err := os.CreateTemp(q.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	_, err = io.WriteString(tmp, msg)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(q.dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("queue message: %w", err)
	}
	return nil
}

func ext(followUp bool) string {
	if followUp {
		return followExt
	}
	return steerExt
}

// names lists the queued messages of one kind, oldest first.
func (q *Queue) names(followUp bool) ([]string, error) {
	ents, err := os.ReadDir(q.dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ext(followUp)) && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Waiting reports whether steering messages wait in the queue, which a
// resume with no prompt takes.
func (q *Queue) Waiting() bool {
	names, _ := q.names(false)
	return len(names) > 0
}

// Take removes and returns the queued messages of one kind, oldest first.
func (q *Queue) Take(followUp bool) []string {
	names, err := q.names(followUp)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			q.report("read message queue: " + err.Error())
		}
		return nil
	}
	var out []string
	for _, n := range names {
		p := filepath.Join(q.dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			q.report("read queued message: " + err.Error())
			continue
		}
		// Remove before use: a message taken twice would be worse than a
		// message lost to a crash right here.
		if err := os.Remove(p); err != nil {
			q.report("remove queued message: " + err.Error())
			continue
		}
		out = append(out, string(data))
	}
	return out
}

func (q *Queue) report(msg string) {
	if q.Warn != nil {
		q.Warn(msg)
	}
}
