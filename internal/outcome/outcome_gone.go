package outcome

import (
	"errors"
)

// errRobotGone is a Robot the cache holds but the API server no longer does.
var ErrRobotGone = errors.New("the Robot no longer exists")
