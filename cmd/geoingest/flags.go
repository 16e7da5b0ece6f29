package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// parse parses a command's arguments with flags anywhere among them, as
// users of other CLIs expect: `geoingest ingest FILE --target admin_units`
// is `geoingest ingest --target admin_units FILE`. A flag's value is the
// next argument unless the flag is boolean or written --name=value. "--"
// ends the flags: every argument after it is positional, so a path that
// begins with "-" goes there. A lone "-" is positional (standard input).
//
// An unknown flag is a usage error that names it, and the argument before
// it when it came after one (a path mistyped as a flag, or a flag of
// another command), then prints the command's usage. -h and --help print
// the usage and return flag.ErrHelp; every other error is errUsage. After
// parse, fs.Args() holds the positional arguments in their order.
func parse(fs *flag.FlagSet, args []string) error {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, _, hasValue := strings.Cut(name, "=")
		f := fs.Lookup(name)
		if f == nil {
			if name == "h" || name == "help" {
				flags = append(flags, a)
				continue
			}
			if name == "" || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "=") {
				return usageError(fs, fmt.Sprintf("bad flag syntax: %s", a))
			}
			msg := fmt.Sprintf("unknown flag %s", a)
			if i > 0 {
				msg += fmt.Sprintf(" (after %q)", args[i-1])
			}
			if len(positional) > 0 {
				msg += "; a path that begins with \"-\" goes after \"--\""
			}
			return usageError(fs, msg)
		}
		flags = append(flags, a)
		if hasValue || isBoolFlag(f) {
			continue
		}
		if i+1 == len(args) {
			return usageError(fs, fmt.Sprintf("flag %s needs a value", a))
		}
		i++
		flags = append(flags, args[i])
	}
	if err := fs.Parse(append(append(flags, "--"), positional...)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

// usageError says what was wrong, prints the command's usage and returns
// errUsage, as the flag package does for the errors it finds itself.
func usageError(fs *flag.FlagSet, msg string) error {
	fmt.Fprintf(fs.Output(), "%s: %s\n", fs.Name(), msg)
	fs.Usage()
	return errUsage
}

// isBoolFlag reports whether f takes no value (the flag package's own rule).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
