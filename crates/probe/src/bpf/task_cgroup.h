/* SPDX-License-Identifier: GPL-2.0 */
/* A task's cgroup, for the programs that name tasks (BPF only: it needs vmlinux.h). */
#ifndef IRQLENS_TASK_CGROUP_H
#define IRQLENS_TASK_CGROUP_H

/*
 * The id of the task's cgroup in the v2 hierarchy (the kernfs id of its directory, which
 * is the directory's inode number, what user space stats): the default hierarchy's
 * cgroup even on a hybrid machine, where v1 controllers are mounted too. Plain loads of
 * BTF pointers (tp_btf: RCU is held), four of them: a few ns, no helper call.
 */
static __always_inline __u64 task_cgroup_id(struct task_struct *p)
{
	return p->cgroups->dfl_cgrp->kn->id;
}

#endif /* IRQLENS_TASK_CGROUP_H */
