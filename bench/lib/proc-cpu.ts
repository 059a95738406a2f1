/** CPU time a process has used, from /proc (Linux): what a service costs per decision whatever else shares the cores. */
import { readFileSync } from 'node:fs';

/** CPU seconds (user + system) process `pid` has used, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
