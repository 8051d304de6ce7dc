package serving

import (
	"net/http"
	"net/http/pprof"
)

// ProfileHandler returns the pprof server's handler, /debug/pprof/. It is
// served with DefaultLimits: a CPU profile or a trace writes its answer
// only after the seconds it was asked for, and net/http/pprof moves the
// write deadline on by those seconds itself.
func ProfileHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
