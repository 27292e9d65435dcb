/* Stored values computed row by row inside the stage that reads them (hl_row_groups.cpp). */
#ifndef HL_ROW_GROUPS_H
#define HL_ROW_GROUPS_H
#include <vector>
extern "C" {
#include "hl_ir.h"
}

/* Whether node i is a sum, product, max or min of its input's innermost axis alone: one result
 * per row, which a stage can compute row by row (an argmax's index search is a stage of its own). */
bool hl_reduces_rows(const hl_graph *g, int i);

/* For each node of g, the node (an owner) in whose loop over rows it is computed, or -1.
 * root: the nodes stored (the rest are inlined into their readers); may_own: the stored nodes
 * and inlined outputs whose stage loops over rows of their innermost axis; may_join: the stored
 * nodes that may be computed per row (elementwise values and reductions of the innermost axis).
 * A node joins an owner's group where every row of the owner reads the same row of it (through
 * elementwise values, reshapes, broadcasts along the row and reductions of the innermost axis)
 * and no stage outside the group reads it. */
std::vector<int> hl_row_groups(const hl_graph *g, const std::vector<char> &root, const std::vector<char> &may_own,
                               const std::vector<char> &may_join);

#endif
