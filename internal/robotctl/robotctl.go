// Package robotctl is the kubectl robot plugin: a Robot's history of specs
// (the ControllerRevisions the operator keeps), the difference between a
// revision and the current spec, and the undo that writes a revision's spec
// back to the Robot as its user would. It reads and writes through the API
// server only, as any client would, and knows nothing of the operator but
// the history's labels and format.
package robotctl

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// Connect returns the clients of the cluster that the flags name, and the
// namespace they name (the context's, or default).
type Connect func() (Clients, string, error)

// Main runs the plugin with args (without the program's name), and returns
// its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	connect := func() (Clients, string, error) {
		config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, overrides)
		ns, _, err := config.Namespace()
		if err != nil {
			return Clients{}, "", err
		}
		rest, err := config.ClientConfig()
		if err != nil {
			return Clients{}, "", err
		}
		robots, err := versioned.NewForConfig(rest)
		if err != nil {
			return Clients{}, "", err
		}
		kube, err := kubernetes.NewForConfig(rest)
		if err != nil {
			return Clients{}, "", err
		}
		return Clients{Robots: robots, Kube: kube}, ns, nil
	}
	command := NewCommand(connect, stdout, stderr)
	flags := command.PersistentFlags()
	flags.StringVar(&loading.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file to use")
	clientcmd.BindOverrideFlags(overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	return Execute(ctx, command, args, stderr)
}

// Execute runs command with args, writes its error to stderr, and returns
// the exit code: 0, or 1 on an error.
func Execute(ctx context.Context, command *cobra.Command, args []string, stderr io.Writer) int {
	command.SetArgs(args)
	if err := command.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// NewCommand returns the kubectl robot command, whose subcommands reach the
// cluster through connect.
func NewCommand(connect Connect, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:         "robot",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl robot"},
		Short:       "The history of a Robot's specs, and the way back",
		Long: "kubectl robot reads the history of a Robot's specs that the operator keeps (ControllerRevisions),\n" +
			"shows how a revision differs from the current spec, and writes a revision's spec back to the Robot.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// A kubectl plugin's completion goes through kubectl.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(&cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions of a Robot's spec, oldest first, with what each changed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, ns, err := connect()
			if err != nil {
				return err
			}
			return History(cmd.Context(), clients, ns, args[0], stdout)
		},
	})
	root.AddCommand(&cobra.Command{
		Use:   "diff NAME REVISION",
		Short: "Show how a revision's spec differs from the Robot's current spec (what an undo to it would change)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			number, err := revisionNumber(args[1])
			if err != nil {
				return err
			}
			clients, ns, err := connect()
			if err != nil {
				return err
			}
			return Diff(cmd.Context(), clients, ns, args[0], number, stdout)
		},
	})
	root.AddCommand(newUndoCommand(connect, stdout))
	return root
}

func newUndoCommand(connect Connect, stdout io.Writer) *cobra.Command {
	var options UndoOptions
	undo := &cobra.Command{
		Use:   "undo NAME",
		Short: "Write a revision's spec back to the Robot (by default, the revision before the current one)",
		Long: "undo writes the spec of a revision back to the Robot, as an update by the field manager that owns\n" +
			"most of its spec (kubectl-client-side-apply, kubectl-edit, a GitOps tool...), so that the change is theirs.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if options.ToRevision < 0 {
				return fmt.Errorf("--to-revision %d: give a revision's number, or 0 for the one before the current one", options.ToRevision)
			}
			clients, ns, err := connect()
			if err != nil {
				return err
			}
			return Undo(cmd.Context(), clients, ns, args[0], options, stdout)
		},
	}
	bindUndoFlags(undo.Flags(), &options)
	return undo
}

func bindUndoFlags(flags *pflag.FlagSet, options *UndoOptions) {
	flags.Int64Var(&options.ToRevision, "to-revision", 0, "The revision to go back to; 0 is the one before the current one")
	flags.StringVar(&options.FieldManager, "field-manager", "", "The field manager of the write (default: the one that owns most of the Robot's spec)")
}

// revisionNumber parses a revision's number.
func revisionNumber(arg string) (int64, error) {
	number, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || number < 1 {
		return 0, fmt.Errorf("revision %q: give a revision's number, as kubectl robot history lists them", arg)
	}
	return number, nil
}
