package gcs

import (
	"time"
)

// notHung bounds how long a test waits for a call that must return.
const notHung = 10 * time.Second
