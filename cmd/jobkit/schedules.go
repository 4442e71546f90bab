package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// schedulesJSON is the document `jobkit schedules list --json` prints (docs/cli.md).
type schedulesJSON struct {
	Version   int                    `json:"version"`
	Schedules []inspect.ScheduleInfo `json:"schedules"`
}

// scheduleActionJSON is the document a schedule action prints with --json (docs/cli.md).
type scheduleActionJSON struct {
	Version int    `json:"version"`
	Group   string `json:"group"`
	Name    string `json:"name"`
	JobName string `json:"job_name,omitempty"`
	Action  string `json:"action"`           // paused, resumed, fired
	Changed bool   `json:"changed"`          // false: it was already paused (resumed)
	JobID   string `json:"job_id,omitempty"` // fired: the tick's job id
	Message string `json:"message_id,omitempty"`
}

func newSchedulesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "schedules", Short: "Recurring schedules: list, pause, resume, fire now"}
	var (
		asJSON bool
		group  string
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the schedules, by the name declared in Go, with their state and next fire times",
		Example: `  jobkit schedules list
  jobkit schedules list --group Shop-recurring --json`,
		Args: noArgs,
		RunE: a.verb(func(s *session, _ []string) error {
			list, err := s.in.Schedules(s.ctx, &inspect.ScheduleOptions{Group: group})
			if err != nil {
				return err
			}
			return s.print(asJSON, func() any { return schedulesJSON{Version: jsonVersion, Schedules: list} }, func(w io.Writer) {
				printSchedules(w, list)
			})
		}),
	}
	action := func(verb, short, example string, run func(s *session, sc inspect.ScheduleInfo) (scheduleActionJSON, error)) *cobra.Command {
		return &cobra.Command{
			Use:     verb + " NAME",
			Short:   short,
			Long:    short + ". NAME is the name the schedule declares in Go (scheduler.Schedule.Name), or its name in EventBridge Scheduler.",
			Example: example,
			Args:    cobra.ExactArgs(1),
			RunE: a.verb(func(s *session, args []string) error {
				sc, err := findSchedule(s, group, args[0])
				if err != nil {
					return err
				}
				doc, err := run(s, sc)
				if err != nil {
					return err
				}
				doc.Version, doc.Group, doc.Name, doc.JobName = jsonVersion, sc.Group, sc.Name, sc.JobName
				return s.print(asJSON, func() any { return doc }, func(w io.Writer) {
					name := safe(scheduleName(sc), nameWidth)
					switch {
					case doc.Action == "fired":
						fmt.Fprintf(w, "schedule %s fired: job %s sent\n", name, safe(doc.JobID, valueWidth))
					case doc.Changed:
						fmt.Fprintf(w, "schedule %s %s\n", name, doc.Action)
					default:
						fmt.Fprintf(w, "schedule %s: already %s, nothing changed\n", name, doc.Action)
					}
				})
			}),
		}
	}
	pause := action("pause", "Pause a schedule: it fires nothing until resumed (missed ticks are not made up)",
		"  jobkit schedules pause nightly-report",
		func(s *session, sc inspect.ScheduleInfo) (scheduleActionJSON, error) {
			changed, err := s.in.SetScheduleState(s.ctx, sc.Group, sc.Name, false)
			return scheduleActionJSON{Action: "paused", Changed: changed}, err
		})
	resume := action("resume", "Resume a paused schedule: it fires from its next time on",
		"  jobkit schedules resume nightly-report",
		func(s *session, sc inspect.ScheduleInfo) (scheduleActionJSON, error) {
			changed, err := s.in.SetScheduleState(s.ctx, sc.Group, sc.Name, true)
			return scheduleActionJSON{Action: "resumed", Changed: changed}, err
		})
	fire := action("fire", "Fire a schedule now: send its job as a tick would, the schedule unchanged",
		"  jobkit schedules fire nightly-report",
		func(s *session, sc inspect.ScheduleInfo) (scheduleActionJSON, error) {
			id, msg, err := s.in.FireSchedule(s.ctx, sc.Group, sc.Name)
			return scheduleActionJSON{Action: "fired", Changed: true, JobID: id, Message: msg}, err
		})
	for _, c := range []*cobra.Command{list, pause, resume, fire} {
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema in docs/cli.md)")
		c.Flags().StringVar(&group, "group", "", "the schedule group (default: every group)")
		cmd.AddCommand(c)
	}
	return cmd
}

// findSchedule finds the one schedule named ref, by the name declared in Go or its Scheduler name.
func findSchedule(s *session, group, ref string) (inspect.ScheduleInfo, error) {
	list, err := s.in.Schedules(s.ctx, &inspect.ScheduleOptions{Group: group, Next: 1})
	if err != nil {
		return inspect.ScheduleInfo{}, err
	}
	var found []inspect.ScheduleInfo
	for _, sc := range list {
		if sc.JobName == ref || sc.Name == ref {
			found = append(found, sc)
		}
	}
	switch len(found) {
	case 0:
		return inspect.ScheduleInfo{}, fmt.Errorf("%w: %s (jobkit schedules list shows them)", inspect.ErrScheduleNotFound, safe(ref, nameWidth))
	case 1:
		return found[0], nil
	}
	var where []string
	for _, sc := range found {
		where = append(where, sc.Group+"/"+sc.Name)
	}
	return inspect.ScheduleInfo{}, usageError{fmt.Errorf("%d schedules are named %s (%s): give --group", len(found), safe(ref, nameWidth), safe(strings.Join(where, ", "), lineWidth))}
}

// scheduleName is the name a schedule is shown by: the one declared in Go, else Scheduler's.
func scheduleName(sc inspect.ScheduleInfo) string {
	if sc.JobName != "" {
		return sc.JobName
	}
	return sc.Name
}

func printSchedules(w io.Writer, list []inspect.ScheduleInfo) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no schedules")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tEXPRESSION\tLAST\tNEXT\tGROUP/SCHEDULE")
	for _, sc := range list {
		last := "-"
		if sc.Last != nil {
			last = when(*sc.Last)
		}
		next := "-"
		if len(sc.Next) > 0 {
			next = when(sc.Next[0])
		}
		if sc.Problem != "" {
			next = safe(sc.Problem, errorWidth)
		}
		expr := sc.Expression
		if sc.TimeZone != "" {
			expr += " " + sc.TimeZone
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safe(scheduleName(sc), nameWidth), safe(sc.Kind, kindWidth), safe(sc.State, reasonWidth),
			safe(expr, valueWidth), last, next, safe(sc.Group+"/"+sc.Name, valueWidth))
	}
	tw.Flush()
}
