/* placeholder until implemented */
typedef int cr__placeholder_t;
