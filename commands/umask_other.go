//go:build !unix

package commands

func umask(m int) int { return m }
