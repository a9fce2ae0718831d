module email-verdict/framework-readers

go 1.19
