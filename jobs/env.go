package jobs




