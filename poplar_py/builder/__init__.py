"""What the user API's Graph and Tensor are built from: the graph's tables (variables, tile
mappings, vertices and their fields), the arithmetic of tensor views (one strided block, or boxes
of several), vertices added in bulk, constants, sorted regions and the graph dumps."""
