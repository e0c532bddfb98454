/* Intrusive doubly-linked lists, after HAProxy's include/haproxy/list.h
 * and the Linux kernel's: the links live inside the element, so adding
 * and removing never allocates and removal is O(1) from the element
 * alone. A list head is a `struct dbk_list` whose next/prev point at
 * itself when empty; an element is found back from its links with
 * dbk_list_elem.
 *
 * Every connection set, the engine's queues and the bench's clients use
 * this one type: a hand-written unlink is where a list bug hides. */
#ifndef DBK_LIST_H
#define DBK_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct dbk_list {
	struct dbk_list *next, *prev;
};

/* A head (or a detached element) that links to itself. */
static inline void dbk_list_init(struct dbk_list *l) { l->next = l->prev = l; }

static inline bool dbk_list_empty(const struct dbk_list *head) { return head->next == head; }

/* Adds el at the front of head's list. */
static inline void dbk_list_push(struct dbk_list *head, struct dbk_list *el)
{
	el->next = head->next;
	el->prev = head;
	head->next->prev = el;
	head->next = el;
}

/* Adds el at the back of head's list (FIFO order with dbk_list_first). */
static inline void dbk_list_append(struct dbk_list *head, struct dbk_list *el)
{
	el->prev = head->prev;
	el->next = head;
	head->prev->next = el;
	head->prev = el;
}

/* Unlinks el from whatever list holds it and leaves it detached, so a
 * second delete is harmless. */
static inline void dbk_list_del(struct dbk_list *el)
{
	el->prev->next = el->next;
	el->next->prev = el->prev;
	dbk_list_init(el);
}

/* The element of type `type` whose member `member` is the link l. */
#define dbk_list_elem(l, type, member) ((type *)(void *)((char *)(l)-offsetof(type, member)))

/* The first element, or NULL when the list is empty. */
#define dbk_list_first(head, type, member) \
	(dbk_list_empty(head) ? NULL : dbk_list_elem((head)->next, type, member))

/* Iterates over the elements; the body may delete the current one (it
 * reads the next link first). `it` and `nx` are struct dbk_list *. */
#define dbk_list_for_each_safe(it, nx, head) \
	for ((it) = (head)->next, (nx) = (it)->next; (it) != (head); (it) = (nx), (nx) = (it)->next)

#endif
