package jobs

import "encoding/json"

// RawArgs is a job whose kind and args are known only at run time (the CLI, proxies, tests).
// It encodes as its JSON args, so a worker of the same kind receives it as its typed struct.
type RawArgs struct {
	KindName string
	JSON     json.RawMessage
}

// Kind returns KindName.
func (r RawArgs) Kind() string { return r.KindName }

// MarshalJSON returns the raw args ({} when empty).
func (r RawArgs) MarshalJSON() ([]byte, error) {
	if len(r.JSON) == 0 {
		return []byte("{}"), nil
	}
	return r.JSON, nil
}
