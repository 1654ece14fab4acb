fn main() {
    remat_explorer::run();
}
