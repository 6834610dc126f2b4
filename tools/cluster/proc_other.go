//go:build !linux

package cluster

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
)

// procStartTime asks ps for the process's start time; a zombie counts as gone.
func procStartTime(pid int) (string, error) {
	out, err := exec.Command("ps", "-o", "stat=,lstart=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(out))
	if line == "" || strings.HasPrefix(line, "Z") {
		return "", errors.New("process exited")
	}
	_, start, _ := strings.Cut(line, " ")
	return strings.TrimSpace(start), nil
}
