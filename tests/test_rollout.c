#include <criterion/criterion.h>
Test(credit, placeholder) {}
