# bash completion for gpuslice and its kubectl plugin (kubectl-gpuslice).
# The candidates come from the binary itself: `gpuslice __complete WORD...`
# reads each verb's --help (src/cli/complete.c), so this file never needs to
# change when a verb gains an option. Installed by `make install` into
# $(PREFIX)/share/bash-completion/completions/.
_gpuslice() {
    local IFS=$'\n'
    COMPREPLY=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _gpuslice gpuslice kubectl-gpuslice
