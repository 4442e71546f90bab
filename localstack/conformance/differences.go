package conformance

// Difference is an emulator deviating from documented AWS behaviour in one check.
type Difference struct {
	Emulator string // "moto", "localstack", "elasticmq", "dynamodb-local"
	Check    string // a Check's Name
	Reason   string // what the emulator does instead, in a few words
	Doc      string // the AWS documentation it contradicts
}

// KnownDifferences lists every deviation the suite has found, mirrored in docs/emulators.md (a
// test keeps the two equal). An emulator that stops deviating fails the run until its entry goes.
var KnownDifferences = []Difference{
	{"localstack", "sqs/change-visibility-moved-to-dlq", "ChangeMessageVisibility of a message moved to the DLQ succeeds", docChangeVisibility},
	{"localstack", "sqs/visibility-timeout-max-12h", "a visibility timeout of 43201 s is accepted", docChangeVisibility},
	{"localstack", "sqs/visibility-12h-from-receipt", "43199 s more, 2 s after the receive, is accepted", docVisibilityGuide},
	{"localstack", "sqs/delay-seconds-max-900", "DelaySeconds 901 is accepted", docSend},
	{"localstack", "sqs/fifo-lock-behind-in-flight", "a group's first message visible again releases the group: the messages behind those in flight are returned", docFIFOLogic},
	{"elasticmq", "sqs/visibility-timeout-max-12h", "a visibility timeout of 43201 s is accepted", docChangeVisibility},
	{"elasticmq", "sqs/visibility-12h-from-receipt", "43199 s more, 2 s after the receive, is accepted", docVisibilityGuide},
}

// FindDifference returns the listed difference of emulator in check, or nil.
func FindDifference(emulator, check string) *Difference {
	for i := range KnownDifferences {
		if d := &KnownDifferences[i]; d.Emulator == emulator && d.Check == check {
			return d
		}
	}
	return nil
}
