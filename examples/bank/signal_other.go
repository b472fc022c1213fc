//go:build !unix

package main

import (
	"errors"
	"os"
)

var errNoStop = errors.New("freezing a worker needs SIGSTOP and SIGCONT, which only Unix systems have")

func freeze(*os.Process) error { return errNoStop }

func thaw(*os.Process) error { return errNoStop }
