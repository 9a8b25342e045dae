// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-syscall readers: the public entries (ts_pub[], struct
 * taskstate_map_entry) mapped read-only into a reader.  Where a thread's
 * entry is, TASKSTATE_IOC_LOCATE says (dev.c).  The read protocol and the
 * rules are in the uapi header (DOC: The mapping).
 *
 * The pages are ts_pub's own, from vmalloc_user() (zeroed, page-backed),
 * inserted with remap_vmalloc_range(), which marks the VMA VM_DONTEXPAND
 * (mremap() cannot grow it) and VM_DONTDUMP.  The mapping holds the file
 * (vma->vm_file), and the file holds the module (fops->owner, taken at
 * open and put at the last fput()): rmmod is refused until the last
 * mapping is gone, and ts_pub is only freed at module exit.
 *
 * The pages are inserted at mmap() time; ts_map_fault() puts one back
 * where a reader dropped it (madvise(MADV_DONTNEED), which zaps the page
 * tables of any mapping that is not VM_PFNMAP): without a fault handler
 * the next read would get SIGBUS (6.1 mm/memory.c, do_read_fault() of a
 * VMA with no ->fault).
 *
 * A scoped descriptor's mapping (docs/design.md, "The scoped mapping")
 * is a view of the table's pages it holds, the k-th page it took at
 * offset k, each inserted by ts_view_fault() at its first read: the same
 * vmalloc pages, so a reader sees each change as a privileged mapping
 * does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/vmalloc.h>
#include "compat.h"
#include "hooks.h"
#include "readers.h"
#include "scope.h"
#include "table.h"

/*
 * The mapping is ts_pub[] itself: the uapi's entry, field for field
 * (unless a build variant's entry is never mapped, hooks.h).
 */
static_assert(TS_HOOK_ENTRY_UNMAPPED ||
	      sizeof(struct ts_pub) == TASKSTATE_MAP_ENTRY_SIZE);
static_assert(sizeof(struct taskstate_map_entry) == TASKSTATE_MAP_ENTRY_SIZE);
static_assert(TS_HOOK_ENTRY_UNMAPPED ||
	      (offsetof(struct ts_pub, word) ==
	       offsetof(struct taskstate_map_entry, word) &&
	       offsetof(struct ts_pub, tid) ==
	       offsetof(struct taskstate_map_entry, tid) &&
	       offsetof(struct ts_pub, gen) ==
	       offsetof(struct taskstate_map_entry, gen) &&
	       offsetof(struct ts_pub, start_ns) ==
	       offsetof(struct taskstate_map_entry, start_ns) &&
	       offsetof(struct ts_pub, state_ns) ==
	       offsetof(struct taskstate_map_entry, state_ns)));

/* Bytes of the mapping: the entries, up to a page boundary. */
static unsigned long ts_map_size(void)
{
	return PAGE_ALIGN((unsigned long)ts_nr_slots * sizeof(struct ts_pub));
}

/* Bytes of a scoped descriptor's mapping: its user's share, in pages. */
static unsigned long ts_view_size(void)
{
	return (unsigned long)ts_view_max_pages() << PAGE_SHIFT;
}

/**
 * ts_map_info() - fill INFO's map_* fields
 * @info: the answer TASKSTATE_IOC_INFO is building
 * @sc: the descriptor's scope, or NULL
 *
 * Context: any; reads only what is fixed at load, and user_share.
 */
void ts_map_info(struct taskstate_info *info, const struct ts_scope *sc)
{
	info->map_entry_size = sizeof(struct ts_pub);
	info->map_layout = TASKSTATE_MAP_LAYOUT;
	info->map_flags = ts_totals ? TASKSTATE_MAP_F_TOTALS : 0;
	info->map_size = sc ? ts_view_size() : ts_map_size();
	info->map_entries = sc ? ts_view_max_pages() * TS_PAGE_ENTRIES :
				 ts_nr_slots;
}

/*
 * A page of the mapping that is not in the reader's page tables any more:
 * the same vmalloc page, with a reference for the page table entry, as
 * vm_insert_page() took one at mmap().  vmf->pgoff is the page's offset
 * in the device, checked against the mapping's size (mremap() cannot
 * grow the VMA past it: VM_DONTEXPAND).
 */
static vm_fault_t ts_map_fault(struct vm_fault *vmf)
{
	if (vmf->pgoff >= ts_map_size() >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	vmf->page = vmalloc_to_page((char *)ts_pub + (vmf->pgoff << PAGE_SHIFT));
	get_page(vmf->page);
	return 0;
}

static const struct vm_operations_struct ts_map_vm_ops = {
	.fault = ts_map_fault,
};

/*
 * A page of a scoped descriptor's mapping: the table's page it holds at
 * that offset, taken now if it holds none yet (ts_view_page()), so no
 * page is ever in a reader's page tables that changes hands later: a
 * descriptor's pages are its until its release, after the last mapping
 * of it is gone (the mapping holds the file).  SIGBUS past the user's
 * share.
 */
static vm_fault_t ts_view_fault(struct vm_fault *vmf)
{
	struct ts_file *f = vmf->vma->vm_file->private_data;
	struct ts_scope *sc = f->sc;
	int pg;

	pg = ts_view_page(&sc->owner, vmf->pgoff);
	if (pg < 0)
		return VM_FAULT_SIGBUS;
	vmf->page = vmalloc_to_page((char *)ts_pub +
				    ((unsigned long)pg << PAGE_SHIFT));
	get_page(vmf->page);
	return 0;
}

static const struct vm_operations_struct ts_view_vm_ops = {
	.fault = ts_view_fault,
};

/**
 * ts_dev_mmap() - mmap() of /dev/taskstate
 * @file: the device's open file
 * @vma: the caller's mapping, shared and read-only
 *
 * A scoped descriptor's mapping is its own pages (ts_view_fault()), in
 * any pid namespace.  Errnos, as the uapi header documents them: EPERM
 * for a privileged descriptor outside the initial pid namespace (the
 * entries hold its tids),
 * EINVAL for MAP_PRIVATE or a range past the end, EACCES for PROT_WRITE
 * or PROT_EXEC.  do_mmap() clears VM_SHARED (not VM_MAYSHARE) for a
 * shared mapping of a read-only file, and itself refuses PROT_WRITE on
 * one with EACCES; a root caller may have opened the device for writing,
 * hence the check here too.  ENODEV where user space cannot load a
 * 64-bit word the kernel stores whole (compat.h, ts_map_word_whole()).
 *
 * Context: process context, mmap_lock held for writing.
 * Return: 0, or -errno.
 */
int ts_dev_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct ts_file *f = file->private_data;
	struct ts_scope *sc = f->sc;
	unsigned long pages = (sc ? ts_view_size() : ts_map_size()) >>
			      PAGE_SHIFT;

	if (TS_HOOK_ENTRY_UNMAPPED || !ts_map_word_whole() ||
	    ts_hook_map_refused())
		return -ENODEV;
	/* A scoped descriptor maps its own pages, in any pid namespace. */
	if (!sc && task_active_pid_ns(current) != &init_pid_ns)
		return -EPERM;
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EACCES;
	if (vma->vm_pgoff >= pages || vma_pages(vma) > pages - vma->vm_pgoff)
		return -EINVAL;
	/*
	 * Never writable or executable later (mprotect() fails with
	 * EACCES), not inherited by fork().  MADV_DOFORK can undo
	 * VM_DONTCOPY; a child then shares the pages and the file, which
	 * is safe, and is the caller's choice.
	 */
	ts_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	ts_vm_flags_set(vma, VM_DONTCOPY);
	if (sc) {
		/* As remap_vmalloc_range() marks the other. */
		ts_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
		vma->vm_ops = &ts_view_vm_ops;
		return 0;
	}
	vma->vm_ops = &ts_map_vm_ops;
	return remap_vmalloc_range(vma, ts_pub, vma->vm_pgoff);
}
