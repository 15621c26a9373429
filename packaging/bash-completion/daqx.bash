# bash completion for daqxctl and daqx-launch, installed under both names in share/bash-completion/completions
# (where bash-completion loads it the first time either command is completed), or sourced by hand.
# Nothing here lists an option or a command: they are read from the --help of the very program being completed
# (asked once per shell and program), so the completion follows the program, whichever build or version it is.
#   options        every --long-option the help names
#   option values  the word after the option in the help: a choice list (local|ssh|slurm) is offered as such,
#                  FILE, DIR, PATH and *.xml complete paths, LEVEL the log levels, --app the partition's ids
#   commands       daqxctl: the lines "  NAME ..." (or "  NAME (or ALIAS) ...") under "commands:", and "  NAME SUB"
#                  gives NAME's sub-commands

declare -gA _daqx_help_text 2>/dev/null

# The --help of program $1, cached for this shell.
_daqx_help() {
  local program=${1/#\~/$HOME}
  if [[ -z ${_daqx_help_text[$program]+set} ]]; then
    _daqx_help_text[$program]=$("$program" --help 2>/dev/null)
  fi
  printf '%s\n' "${_daqx_help_text[$program]}"
}

# The word the help writes after option $2 of program $1 (PARTITION.xml, SECONDS, local|ssh|slurm), empty when
# the option takes no value.
_daqx_option_value() {
  _daqx_help "$1" | grep -oE -- "(^|[^-a-z])$2[ =][^ ]+" | sed -E 's/^[^-]*//; s/^[^ =]+[ =]//; s/[]),.]+$//' |
    grep -E '^([A-Z]|[a-z][-a-z]*(\|[a-z][-a-z]*)+$)' | head -n 1
}

_daqx_complete() {
  local program=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()

  # The value of the option before the cursor.
  if [[ $prev == --* ]]; then
    local value
    value=$(_daqx_option_value "$program" "$prev")
    if [[ -n $value ]]; then
      case $value in
        *\|*) mapfile -t COMPREPLY < <(compgen -W "${value//|/ }" -- "$cur") ;;
        LEVEL) mapfile -t COMPREPLY < <(compgen -W "debug info warning error" -- "$cur") ;;
        TID)
          local config="" i
          for ((i = 1; i < COMP_CWORD - 1; i++)); do
            [[ ${COMP_WORDS[i]} == --config || ${COMP_WORDS[i]} == -c ]] && config=${COMP_WORDS[i + 1]/#\~/$HOME}
          done
          [[ -r $config ]] && mapfile -t COMPREPLY < <(compgen -W \
            "$(grep -oE '<Application[^>]*[[:space:]]id="[0-9]+"' "$config" | grep -oE 'id="[0-9]+"' | tr -dc '0-9\n')" \
            -- "$cur")
          ;;
        *.xml)
          compopt -o filenames 2>/dev/null
          mapfile -t COMPREPLY < <(compgen -f -X '!*.xml' -- "$cur"; compgen -d -- "$cur")
          ;;
        DIR*)
          compopt -o filenames 2>/dev/null
          mapfile -t COMPREPLY < <(compgen -d -- "$cur")
          ;;
        FILE* | PATH*)
          compopt -o filenames 2>/dev/null
          mapfile -t COMPREPLY < <(compgen -f -- "$cur")
          ;;
      esac
      return 0
    fi
  fi

  local help
  help=$(_daqx_help "$program")
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(grep -oE -- '--[a-zA-Z][-a-zA-Z0-9]*' <<<"$help" | sort -u)" -- "$cur")
    return 0
  fi

  # The commands, for a program whose help lists them: the first word that is neither an option nor an option's
  # value is the command, the next its sub-command.
  local commands
  # "  watch (or top)  ...": both names.
  commands=$(sed -n '/^commands:/,/^[^ ]/{/^  [a-z]/p}' <<<"$help" |
    awk '{print $1} $2 == "(or" {sub(/\).*/, "", $3); print $3}' | sort -u)
  [[ -z $commands ]] && return 0
  local words=() i word
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -* ]]; then
      [[ $word != *=* && -n $(_daqx_option_value "$program" "$word") ]] && ((i++))
      continue
    fi
    words+=("$word")
  done
  if ((${#words[@]} == 0)); then
    mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
  elif ((${#words[@]} == 1)); then
    mapfile -t COMPREPLY < <(compgen -W \
      "$(sed -n '/^commands:/,/^[^ ]/p' <<<"$help" | awk -v c="${words[0]}" '$1 == c && $2 ~ /^[a-z][-a-z]*$/ {print $2}')" \
      -- "$cur")
  fi
  return 0
}

complete -F _daqx_complete daqxctl daqx-launch
